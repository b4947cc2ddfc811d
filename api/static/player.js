// The play view: a game against the bot, kept on the server (POST /v1/games,
// POST /v1/games/{id}/moves). The page shows the person's move at once; the bot's reply
// follows after a short pause (none with reduced motion), so it reads as a turn.

import { ApiError, request } from "./api.js";
import { $, Alert, confirmAction, errorText, isPassing, reducedMotion, sleep } from "./alert.js";
import { analyseHash } from "./analyser.js";
import { Board } from "./board.js";
import { GAMES, Position } from "./rules.js";

//: Where the id of the game in progress is kept, so a reload resumes it.
const GAME_KEY = "plybot.game";

/** The least time between the person's stone and the bot's (ms): the person's stone has
 * landed (its fall lasts at most ~400 ms) before the bot's starts. */
export const TURN_PAUSE_MS = 450;

export class Player {
  constructor() {
    this.alert = new Alert($("#play-alert"));
    this.board = new Board($("#play-board"), { name: "Game board", onMove: (m) => this.move(m) });
    this.game = GAMES.connect4;
    this.session = null; // the API's state of the game
    this.position = new Position(this.game);
    this.busy = false; // a request is in flight (the bot is thinking)
    this.resumeTimer = null; // a retry after the service failed for a moment
    this.status = "Press New game to start.";
    this.announced = 0; // ply of the last bot move announced to screen readers
    $("#play-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.start();
    });
    $("#play-resign").addEventListener("click", () => this.resign());
    $("#play-takeback").addEventListener("click", () => this.takeBack());
    $("#play-rematch").addEventListener("click", () => this.rematch());
    $("#play-flip").addEventListener("click", () => {
      this.board.setFlipped(!this.board.flipped);
      $("#play-flip").setAttribute("aria-pressed", String(this.board.flipped));
    });
    $("#play-game").addEventListener("change", () => {
      if (!this.session || !this.ongoing) {
        // The finished game goes with its board: its result (and its review link) must not
        // stay over an empty board of another game.
        this.session = null;
        this.status = this.describe();
        this.game = GAMES[$("#play-game").value];
        this.position = new Position(this.game);
        this.alert.clear();
        this.render();
      }
    });
  }

  open() {
    this.render();
    if (!this.restored) {
      this.restored = true;
      this.restore();
    }
  }

  /** The game this browser was playing (games live on the server; the id is kept here). */
  async restore() {
    const id = localStorage.getItem(GAME_KEY);
    if (!id || this.session) return;
    // Busy (and drawn so: New game is disabled) until the game is back, so a click on
    // New game is not silently dropped and the stored game cannot replace a new one.
    this.busy = true;
    this.status = "Loading your game…";
    this.render();
    try {
      this.adopt(await request("GET", `/v1/games/${encodeURIComponent(id)}`));
      this.announced = this.position.ply; // not news: it was on the board before the reload
      $("#play-game").value = this.game.name;
      if (this.session.level) $("#play-level").value = this.session.level;
      await this.awaitBot();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) localStorage.removeItem(GAME_KEY);
      else this.fail(err, "Could not load your game.");
    } finally {
      this.busy = false;
      if (!this.session) this.status = this.describe();
      this.render();
    }
  }

  /** Take back my last move and the bot's reply (the server counts it). */
  async takeBack() {
    if (!this.canTakeBack || this.busy) return;
    this.busy = true;
    try {
      this.adopt(await request("POST", `/v1/games/${encodeURIComponent(this.session.id)}/takeback`));
    } catch (err) {
      this.fail(err, "Could not take the move back.");
    } finally {
      this.busy = false;
    }
    this.render();
  }

  /** My turn in an ongoing game, with a move of mine (and the bot's reply) to take back. */
  get canTakeBack() {
    const s = this.session;
    return Boolean(this.ongoing && s.turn === "human" && s.moves.length >= 2);
  }

  async resign() {
    if (!this.ongoing || this.busy) return;
    if (!(await confirmAction("Resign this game? plybot wins it.", "Resign"))) return;
    if (!this.ongoing) return;
    try {
      this.adopt(await request("POST", `/v1/games/${encodeURIComponent(this.session.id)}/resign`));
    } catch (err) {
      this.fail(err, "Could not resign.");
    }
    this.render();
  }

  get ongoing() {
    return this.session && this.session.status === "ongoing";
  }

  /** 0 or 1: which side the person plays in the current game. */
  get humanSide() {
    return this.session?.first === "bot" ? 1 : 0;
  }

  get myTurn() {
    return this.ongoing && !this.busy && this.session.turn === "human";
  }

  /** A new game like the one that just ended, sides swapped (the form says so too). */
  async rematch() {
    if (!this.session || this.ongoing || this.busy) return;
    const first = this.session.first === "human" ? "bot" : "human";
    $("#play-game").value = this.session.game;
    if (this.session.level) $("#play-level").value = this.session.level;
    $(`#play-form input[name=first][value=${first}]`).checked = true;
    await this.start();
  }

  async start() {
    if (this.busy) return;
    if (this.ongoing && this.position.ply > 0) {
      const ok = await confirmAction("Abandon this game and start a new one?", "Start a new game");
      if (!ok || this.busy) return;
    }
    clearTimeout(this.resumeTimer);
    this.alert.clear();
    const game = GAMES[$("#play-game").value];
    const body = {
      game: game.name,
      level: $("#play-level").value,
      first: new FormData($("#play-form")).get("first"),
    };
    this.busy = true;
    this.game = game;
    this.session = null;
    this.announced = 0;
    this.position = new Position(game);
    this.status = body.first === "bot" ? "plybot is thinking…" : "Starting…";
    this.render();
    try {
      this.adopt(await request("POST", "/v1/games", body));
      await this.awaitBot();
    } catch (err) {
      this.fail(err, "Could not start a game.");
    } finally {
      this.busy = false;
      this.render();
    }
  }

  async move(move) {
    if (!this.ongoing) return;
    if (!this.position.canPlay(move)) {
      // A key for a full column (or a taken cell): say so instead of failing silently.
      const what = this.game.kind === "columns" ? `Column ${move + 1} is full` : `Cell ${move + 1} is taken`;
      this.alert.show(`${what}: choose another move.`, { kind: "info", cause: "key" });
      return;
    }
    if (!this.myTurn) return;
    clearTimeout(this.resumeTimer);
    this.alert.clear();
    // The board's buttons are disabled while the bot thinks, which drops their
    // focus; a keyboard player gets it back on the same column afterwards.
    const hadFocus = this.board.root.contains(document.activeElement);
    const before = this.position.copy();
    const playedAt = performance.now();
    this.position.play(move); // shown at once; the server has the last word
    this.busy = true;
    this.status = this.position.over ? "…" : "plybot is thinking…";
    this.render();
    try {
      const reply = await request("POST", `/v1/games/${encodeURIComponent(this.session.id)}/moves`, {
        move: String(move + 1),
      });
      const game = typeof reply.game === "object" ? reply.game : reply;
      if (game.position.length > this.position.notation().length) {
        // The bot has answered already: let the person's stone land first.
        await this.turnPause(playedAt);
      }
      this.adopt(reply);
      await this.awaitBot(playedAt);
    } catch (err) {
      this.position = before;
      this.fail(err, "Your move was taken back:", { tookBack: true });
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) await this.refresh();
    } finally {
      this.busy = false;
      this.render();
      if (hadFocus && this.myTurn) this.board.focusMove(move);
    }
  }

  /** Wait until TURN_PAUSE_MS have passed since `since` (no wait with reduced motion). */
  async turnPause(since) {
    if (reducedMotion()) return;
    const left = TURN_PAUSE_MS - (performance.now() - since);
    if (left > 0) await sleep(left);
  }

  /** While the bot is to move, wait for its reply (GET /v1/games/{id}?wait=S). */
  async awaitBot(since = performance.now()) {
    while (this.ongoing && this.session.turn === "bot") {
      this.status = "plybot is thinking…";
      this.render();
      const state = await request("GET", `/v1/games/${encodeURIComponent(this.session.id)}?wait=10`);
      if (state.turn !== "bot") await this.turnPause(since);
      this.adopt(state);
    }
  }

  async refresh() {
    if (!this.session) return;
    try {
      this.adopt(await request("GET", `/v1/games/${encodeURIComponent(this.session.id)}`));
    } catch {
      // the alert already says what went wrong
    }
  }

  /**
   * Take the server's state as the truth: a game (POST /v1/games, GET /v1/games/{id})
   * or a move's answer {reply, game, notice}. A notice ("the bot is still thinking") is
   * shown while it holds and cleared once the state it explained has changed.
   */
  adopt(body) {
    const session = typeof body.game === "object" ? body.game : body;
    this.session = session;
    if (session.status === "ongoing") localStorage.setItem(GAME_KEY, session.id);
    else localStorage.removeItem(GAME_KEY);
    this.game = GAMES[session.game] || this.game;
    this.position = Position.parse(this.game, session.position);
    this.status = this.describe();
    this.alert.clear("service"); // the service answered: an outage message is stale now
    if (body.notice) this.alert.show(body.notice, { kind: "info", cause: "notice" });
    else if (session.turn !== "bot") this.alert.clear("notice");
    this.announce();
  }

  /** Tell screen readers which column the bot played (a polite live region). */
  announce() {
    const moves = this.session?.moves || [];
    const botSide = 1 - this.humanSide;
    for (let ply = moves.length; ply > this.announced; ply--) {
      if ((ply - 1) % 2 === botSide) {
        const unit = this.game.kind === "columns" ? "column" : "cell";
        $("#play-announce").textContent = `plybot played ${unit} ${moves[ply - 1]}.`;
        break;
      }
    }
    this.announced = moves.length;
  }

  describe() {
    const s = this.session;
    if (!s) return "Press New game to start.";
    if (s.status === "ongoing") return s.turn === "human" ? "Your move." : "plybot is thinking…";
    const how = s.status === "resigned" ? " by resignation" : s.status === "forfeit" ? " on time" : "";
    if (!s.winner) return "Draw. Nobody wins this one.";
    return s.winner === "human" ? `You win${how}! Well played.` : `plybot wins${how}.`;
  }

  fail(err, what, { tookBack = false } = {}) {
    let message = errorText(err);
    if (tookBack || (err instanceof ApiError && err.status === 422)) message = `${what} ${message}`;
    const passing = isPassing(err);
    if (passing && this.session) {
      // A game in hand: take the server's state again by itself once the service is back
      // (a bot reply that was on its way then shows up); a move that was refused is not
      // replayed: the board shows it unplayed, for the person to play again.
      const wait = err.retryAfter || 3;
      this.alert.show(message, { retryIn: wait, cause: "service" });
      this.scheduleResume(wait);
    } else {
      if (passing && err.retryAfter) message += ` Try again in ${err.retryAfter} s.`;
      this.alert.show(message, { cause: passing ? "service" : "error" });
    }
    this.status = this.session ? this.describe() : "Press New game to start.";
  }

  scheduleResume(seconds) {
    clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => this.resume(), seconds * 1000);
  }

  /** After a passing failure: the game's state from the server, then the bot's reply if it is due. */
  async resume() {
    if (!this.session) return;
    if (this.busy) {
      this.scheduleResume(1); // a request of the person's own is in flight: it decides first
      return;
    }
    this.busy = true;
    this.render();
    try {
      this.adopt(await request("GET", `/v1/games/${encodeURIComponent(this.session.id)}`));
      this.alert.clear();
      await this.awaitBot();
    } catch (err) {
      this.fail(err, "Could not load your game."); // passing again: tries again later
    } finally {
      this.busy = false;
      this.render();
    }
  }

  render() {
    this.board.setGame(this.game);
    this.board.update(this.position, { disabled: !this.myTurn });
    const over = this.session && !this.ongoing;
    const status = $("#play-status");
    status.textContent = this.status;
    status.className = `status${this.busy && !over ? " thinking" : ""}${over ? " result" : ""}`;
    if (over) {
      const winner = this.session.winner;
      status.dataset.outcome = !winner ? "draw" : winner === "human" ? "win" : "loss";
    } else {
      delete status.dataset.outcome;
    }
    const me = this.humanSide;
    const level = this.session?.level ? ` (${this.session.level})` : "";
    $("#play-players").replaceChildren(
      ...(this.session
        ? ["You play ", ...side(this.game, me), ` · plybot${level} plays `, ...side(this.game, 1 - me)]
        : []),
    );
    this.renderMoves();
    const bot = this.session?.last_bot_move;
    $("#play-botinfo").textContent = bot ? botInfo(bot, this.game) : "";
    $("#play-analyse").href = analyseHash(this.game, this.position.notation());
    $("#play-review").hidden = !over || this.position.ply === 0;
    $("#play-review").href = analyseHash(this.game, this.position.notation(), true);
    $("#play-takeback").hidden = !this.canTakeBack;
    $("#play-takeback").disabled = this.busy;
    const takebacks = this.session?.takebacks || 0;
    $("#play-takeback").title = takebacks ? `Taken back so far: ${takebacks}` : "";
    $("#play-rematch").hidden = !over;
    $("#play-rematch").disabled = this.busy;
    $("#play-resign").hidden = !this.ongoing;
    $("#play-resign").disabled = this.busy;
    $("#play-new").textContent = this.ongoing ? "Restart" : "New game";
    $("#play-new").disabled = this.busy;
  }

  /** The game's moves, numbered in pairs; each a link to analyse the position after it. */
  renderMoves() {
    const list = $("#play-moves");
    list.replaceChildren();
    const moves = this.position.moves;
    if (!moves.length) {
      list.textContent = "—";
      return;
    }
    for (let i = 0; i < moves.length; i++) {
      if (i % 2 === 0) {
        const number = document.createElement("span");
        number.className = "move-no";
        number.textContent = `${i / 2 + 1}.`;
        list.append(number, " ");
      }
      const link = document.createElement("a");
      link.className = `tree-move p${i % 2}`;
      link.textContent = String(moves[i] + 1);
      const notation = moves.slice(0, i + 1).map((m) => m + 1).join("");
      link.href = analyseHash(this.game, notation);
      const who = (i % 2) === this.humanSide ? "you" : "plybot";
      link.setAttribute("aria-label", `Move ${i + 1}, ${who}: ${this.game.unit} ${moves[i] + 1} (analyse the position after it)`);
      list.append(link, " ");
    }
  }
}

/** A player's colour and name (Connect Four: "● Red"; tic-tac-toe: a coloured "X"). */
function side(game, who) {
  const span = document.createElement("span");
  span.className = `swatch ${game.kind} p${who}`;
  if (game.kind === "cells") {
    span.textContent = game.sides[who];
    return [span];
  }
  span.setAttribute("aria-hidden", "true");
  return [span, ` ${game.sides[who]}`];
}

/** What the bot did, in plain words. */
function botInfo(bot, game) {
  const parts = [`plybot played ${game.unit} ${bot.move}`];
  if (bot.time_ms !== undefined) parts.push(thought(bot.time_ms));
  if (bot.cache === "hit") parts.push("(it knew this position already)");
  return parts.join(" ");
}

/** How long the bot thought, in words: "at once" below a millisecond (never "0 ms"). */
export function thought(ms) {
  if (!(ms >= 1)) return "at once";
  return ms >= 1000 ? `after ${(ms / 1000).toFixed(1)} s of thought` : `after ${Math.round(ms)} ms of thought`;
}
