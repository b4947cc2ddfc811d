"""The bot's move in a game: asked of the workers, awaited and played, the one way for
every front-end (the HTTP API's games and the Discord bot's).

The move is a job on the ``interactive`` queue (through :class:`~worker.core.client.JobClient`),
and the session records it (``pending``, :meth:`~worker.core.games.GameSession.expect_bot`)
before anyone waits, so whoever looks at the game next (another request, a restarted
process) finds the job and plays its answer, or asks again if it failed, was lost or is
overdue. Both steps are :meth:`~worker.core.games.GameStore.update` transitions (optimistic
concurrency): of two processes asking at once, one job is recorded and the other is
cancelled; of two playing one answer, one plays it and the other finds the game moved on.

The session handed in carries its parsed position (see :mod:`worker.core.games`), and so
does every session handed back: asking for and playing the bot's move parse nothing.

What a front-end decides for itself: the thinking time of a move, how long a call waits,
how many jobs one move may have before it stops asking (:class:`BotMoves`), and what to
tell people about a :class:`BotTurn`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import cast

from worker.core.client import JobClient, JobTimeout, UnknownJob
from worker.core.contract import JobState, Level, MoveRequest, MoveResult
from worker.core.games import BotMove, GameSession, GameStore, GameTurnError, Pending
from worker.core.settings import Settings

__all__ = ["RETRIES", "BotMoves", "BotTurn"]

log = logging.getLogger(__name__)

#: Times one :meth:`BotMoves.advance` call asks again after a failed, lost or overdue job.
RETRIES = 2
#: Slack, past the queue's time-to-live and job timeout, before a job counts as overdue.
OVERDUE_MARGIN_S = 5.0


def overdue_after_s(settings: Settings) -> float:
    """How long after it was asked for a bot move's job counts as overdue (lost): the
    ``interactive`` queue's time-to-live and job timeout, plus :data:`OVERDUE_MARGIN_S`.
    The one measure for every front end (``BotMoves``, the Discord bot's sweeper)."""
    return settings.interactive_ttl_s + settings.interactive_timeout_s + OVERDUE_MARGIN_S


@dataclass(frozen=True)
class BotTurn:
    """Where the bot's move stands after :meth:`BotMoves.advance`.

    ``session``: the game now. ``reply``: the bot's move, when this call played it.
    ``notice``: why the bot has not moved, when known (a job failed and was asked
    again; it is still thinking). ``failure``: set only when this call stopped asking
    (see :class:`BotMoves`): the last job's error, in one line.
    """

    session: GameSession
    reply: BotMove | None = None
    notice: str | None = None
    failure: str | None = None


@dataclass(frozen=True)
class _Failure:
    reason: str  # the job's error
    words: str  # the same, said of the bot's move


class BotMoves:
    """The bot's moves in the games of ``games``, computed by the workers through ``client``.

    ``deadline_ms`` is each move's thinking time (at most ``settings.max_move_deadline_ms``).
    ``attempts`` is how many jobs one move may have (failed and lost ones included)
    before :meth:`advance` stops asking again and reports the failure; ``None``: no
    limit (each call still asks again at most :data:`RETRIES` times). A job not
    finished ``overdue_s`` after it was asked for (the ``interactive`` queue's
    time-to-live and job timeout, plus :data:`OVERDUE_MARGIN_S`) counts as lost.
    """

    def __init__(
        self,
        games: GameStore,
        client: JobClient,
        settings: Settings,
        *,
        deadline_ms: int,
        attempts: int | None = None,
    ) -> None:
        self.games = games
        self.client = client
        self.deadline_ms = min(deadline_ms, settings.max_move_deadline_ms)
        self.attempts = attempts
        self.overdue_s = overdue_after_s(settings)

    def request(self, session: GameSession) -> MoveRequest:
        """The job that computes the bot's move in ``session`` (checked against the position
        the session carries: nothing is parsed for it)."""
        return MoveRequest.of(
            session.position(),
            level=cast(Level, session.level or "medium"),
            deadline_ms=self.deadline_ms,
        )

    async def ask(self, session: GameSession) -> GameSession:
        """Ask for the bot's move in ``session`` and record the job, replacing the one
        ``session`` records (if any); returns the game as stored then.

        Does nothing unless the bot is to move. If the stored game differs from
        ``session`` (it moved on, or another process asked first), the stored game
        stands and this job is cancelled.
        """
        if not session.bot_to_move:
            return session
        job_id = await self.client.submit(self.request(session))
        ply, replacing = session.ply, _job_of(session.pending)

        def expect(s: GameSession) -> GameSession:
            if s.ply != ply or not s.bot_to_move or _job_of(s.pending) != replacing:
                return s
            return s.expect_bot(job_id)

        stored = await self.games.update(session.id, expect, known=session)
        if _job_of(stored.pending) != job_id:
            await self.client.cancel(job_id)
        return stored

    async def advance(self, session: GameSession, *, wait_s: float | None) -> BotTurn:
        """If the bot is to move: make sure its move is asked for, wait for it, play it.

        Waits ``wait_s`` seconds at most in all (``None``: until the job ends or is
        overdue); a job still running then goes on, and a later call plays its
        answer. A failed, lost or overdue job is asked again (see :class:`BotMoves`
        for how often). Returns at once when the bot is not to move; raises
        :class:`~worker.core.games.GameNotFoundError` if the game is gone.
        """
        end = None if wait_s is None else time.monotonic() + wait_s
        notice = None
        retries = 0
        while True:
            if not session.bot_to_move:
                return BotTurn(session, notice=notice)
            pending = session.pending
            if pending is None:
                session = await self.ask(session)
                continue
            state, failure = await self._wait(pending, end)
            if failure is None:
                if state is None or state.status != "done":
                    return BotTurn(session, notice="the bot is still thinking")
                return await self._play(session, pending, state)
            log.warning("game %s: bot move job %s: %s", session.id, pending.job_id, failure.reason)
            out_of_attempts = self.attempts is not None and pending.attempts >= self.attempts
            if retries >= RETRIES or out_of_attempts:
                return BotTurn(session, notice=failure.words, failure=failure.reason)
            retries += 1
            notice = f"{failure.words}; asked again"
            session = await self.ask(session)

    async def _wait(
        self, pending: Pending, end: float | None
    ) -> tuple[JobState | None, _Failure | None]:
        """The state of ``pending``'s job after waiting until ``end`` (monotonic) or until
        it is overdue, whichever comes first; or why it will not answer."""
        job_id = pending.job_id
        until_overdue = pending.requested_at + self.overdue_s - time.time()
        until_end = float("inf") if end is None else end - time.monotonic()
        timeout = min(until_overdue, until_end)
        try:
            if timeout > 0:
                state = await self.client.wait(job_id, timeout=timeout)
            else:
                state = await self.client.status(job_id)
        except UnknownJob as exc:
            return None, _Failure(str(exc), "the bot's move was lost")
        if state.status == "failed":
            error = state.error or "failed"
            return state, _Failure(error, f"the bot's move failed ({error})")
        if state.status != "done" and until_overdue <= until_end:
            late = str(JobTimeout(state, self.overdue_s))
            return state, _Failure(late, f"the bot's move got no answer ({late})")
        return state, None

    async def _play(self, session: GameSession, pending: Pending, state: JobState) -> BotTurn:
        assert isinstance(state.result, MoveResult)
        info = BotMove(ply=pending.ply, **state.result.model_dump())

        def play(s: GameSession) -> GameSession:
            return s.play_bot(pending.job_id, info)

        try:
            session = await self.games.update(session.id, play, known=session)
        except GameTurnError:  # another caller played it first, or the game moved on
            return BotTurn(await self.games.get(session.id, known=session))
        return BotTurn(session, reply=info)


def _job_of(pending: Pending | None) -> str | None:
    return None if pending is None else pending.job_id
