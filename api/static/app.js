// plybot's page: play against the bot, or analyse a position, over the HTTP API.
//
// Two views behind hash routes: #/play and #/analyse/<game>/<moves> (a link to the
// latter shows the same board; ?game=connect4&position=4453 works too). Every
// score and every bot move comes from the service; the page only draws.

import { ApiError, followAnalysis, request } from "./api.js";
import { Board } from "./board.js";
import { GAMES, Position, RulesError, describeScore, ordinal } from "./rules.js";

const $ = (selector) => document.querySelector(selector);

// -- messages ------------------------------------------------------------------------

/** One view's alert box: an error in plain words, with a countdown when it retries by itself. */
class Alert {
  constructor(node) {
    this.node = node;
    this.timer = null;
  }

  show(message, { retryIn = null, kind = "error" } = {}) {
    clearInterval(this.timer);
    this.node.hidden = false;
    this.node.className = `alert ${kind}`;
    const text = document.createElement("span");
    text.className = "alert-text";
    text.textContent = message;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "alert-close";
    close.setAttribute("aria-label", "Dismiss this message");
    close.textContent = "×";
    close.addEventListener("click", () => this.clear());
    this.node.replaceChildren(text, close);
    if (retryIn) {
      const count = document.createElement("span");
      count.className = "alert-count";
      text.append(count);
      let left = retryIn;
      const tick = () => {
        count.textContent = left > 0 ? ` (retrying in ${left} s)` : " (retrying…)";
        left -= 1;
      };
      tick();
      this.timer = setInterval(tick, 1000);
    }
  }

  clear() {
    clearInterval(this.timer);
    this.node.hidden = true;
    this.node.replaceChildren();
  }
}

function errorText(err) {
  return err instanceof ApiError || err instanceof RulesError ? err.message : `Unexpected error: ${err.message}`;
}

// -- routing ---------------------------------------------------------------------------

/** {view, game, notation} of the current address. */
function readRoute() {
  const params = new URLSearchParams(location.search);
  if (!location.hash && (params.has("position") || params.has("game"))) {
    return { view: "analyse", game: params.get("game") || "connect4", notation: params.get("position") || "" };
  }
  const [view, game, notation = ""] = location.hash.replace(/^#\/?/, "").split("/");
  if (view === "analyse") return { view, game: game || "connect4", notation: decodeURIComponent(notation) };
  return { view: "play", game: game || null, notation: "" };
}

function analyseHash(game, notation) {
  return `#/analyse/${game.name}/${notation}`;
}

function route() {
  const { view, game, notation } = readRoute();
  $("#play-view").hidden = view !== "play";
  $("#analyse-view").hidden = view !== "analyse";
  for (const [tab, name] of [[$("#tab-play"), "play"], [$("#tab-analyse"), "analyse"]]) {
    if (name === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (view === "analyse") analyser.open(game, notation);
  else player.open();
}

//: Where the id of the game in progress is kept, so a reload resumes it.
const GAME_KEY = "plybot.game";

// -- Play ------------------------------------------------------------------------------

/** A game against the bot, kept on the server (POST /v1/games, POST /v1/games/{id}/moves). */
class Player {
  constructor() {
    this.alert = new Alert($("#play-alert"));
    this.board = new Board($("#play-board"), { name: "Game board", onMove: (m) => this.move(m) });
    this.game = GAMES.connect4;
    this.session = null; // the API's state of the game
    this.position = new Position(this.game);
    this.busy = false; // a request is in flight (the bot is thinking)
    this.resumeTimer = null; // a retry after the service failed for a moment
    this.status = "Press New game to start.";
    $("#play-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.start();
    });
    $("#play-resign").addEventListener("click", () => this.resign());
    $("#play-game").addEventListener("change", () => {
      if (!this.session || !this.ongoing) {
        this.game = GAMES[$("#play-game").value];
        this.position = new Position(this.game);
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
    this.busy = true;
    try {
      this.adopt(await request("GET", `/v1/games/${encodeURIComponent(id)}`));
      $("#play-game").value = this.game.name;
      if (this.session.level) $("#play-level").value = this.session.level;
      await this.awaitBot();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) localStorage.removeItem(GAME_KEY);
      else this.fail(err, "Could not load your game.");
    } finally {
      this.busy = false;
      this.render();
    }
  }

  async resign() {
    if (!this.ongoing || this.busy) return;
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

  async start() {
    if (this.busy) return;
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
    if (!this.myTurn) return;
    clearTimeout(this.resumeTimer);
    this.alert.clear();
    // The board's buttons are disabled while the bot thinks, which drops their
    // focus; a keyboard player gets it back on the same column afterwards.
    const hadFocus = this.board.root.contains(document.activeElement);
    const before = this.position.copy();
    this.position.play(move); // shown at once; the server has the last word
    this.busy = true;
    this.status = this.position.over ? "…" : "plybot is thinking…";
    this.render();
    try {
      const reply = await request("POST", `/v1/games/${encodeURIComponent(this.session.id)}/moves`, {
        move: String(move + 1),
      });
      this.adopt(reply);
      await this.awaitBot();
    } catch (err) {
      this.position = before;
      this.fail(err, "The move was not played.");
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) await this.refresh();
    } finally {
      this.busy = false;
      this.render();
      if (hadFocus && this.myTurn) this.board.focusMove(move);
    }
  }

  /** While the bot is to move, wait for its reply (GET /v1/games/{id}?wait=S). */
  async awaitBot() {
    while (this.ongoing && this.session.turn === "bot") {
      this.status = "plybot is thinking…";
      this.render();
      this.adopt(await request("GET", `/v1/games/${encodeURIComponent(this.session.id)}?wait=10`));
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
   * or a move's answer {reply, game, notice}.
   */
  adopt(body) {
    const session = typeof body.game === "object" ? body.game : body;
    this.session = session;
    if (session.status === "ongoing") localStorage.setItem(GAME_KEY, session.id);
    else localStorage.removeItem(GAME_KEY);
    this.game = GAMES[session.game] || this.game;
    this.position = Position.parse(this.game, session.position);
    this.status = this.describe();
    if (body.notice) this.alert.show(body.notice, { kind: "info" });
  }

  describe() {
    const s = this.session;
    if (!s) return "Press New game to start.";
    if (s.status === "ongoing") return s.turn === "human" ? "Your move." : "plybot is thinking…";
    const how = s.status === "resigned" ? " by resignation" : s.status === "forfeit" ? " on time" : "";
    if (!s.winner) return "Draw. Nobody wins this one.";
    return s.winner === "human" ? `You win${how}! Well played.` : `plybot wins${how}.`;
  }

  fail(err, what) {
    let message = errorText(err);
    if (err instanceof ApiError && err.status === 422) message = `${what} ${message}`;
    const passing = err instanceof ApiError && err.transient;
    if (passing && this.session) {
      // A game in hand: take the server's state again by itself once the service is back
      // (a bot reply that was on its way then shows up); a move that was refused is not
      // replayed: the board shows it unplayed, for the person to play again.
      const wait = err.retryAfter || 3;
      this.alert.show(message, { retryIn: wait });
      this.scheduleResume(wait);
    } else {
      if (passing && err.retryAfter) message += ` Try again in ${err.retryAfter} s.`;
      this.alert.show(message);
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
    $("#play-moves").textContent = this.position.ply ? this.position.notation() : "—";
    const bot = this.session?.last_bot_move;
    $("#play-botinfo").textContent = bot ? botInfo(bot) : "";
    $("#play-analyse").href = analyseHash(this.game, this.position.notation());
    $("#play-resign").hidden = !this.ongoing;
    $("#play-resign").disabled = this.busy;
    $("#play-new").textContent = this.ongoing ? "Restart" : "New game";
    $("#play-new").disabled = this.busy;
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

function botInfo(bot) {
  const parts = [`plybot played ${bot.move}`];
  if (bot.depth) parts.push(`depth ${bot.depth}`);
  if (bot.time_ms !== undefined) parts.push(`${Math.round(bot.time_ms)} ms`);
  if (bot.cache === "hit") parts.push("from the cache");
  return parts.join(" · ");
}

// -- Analyse ---------------------------------------------------------------------------

/** Explore positions; each one is analysed by the service and its moves scored on the board. */
class Analyser {
  constructor() {
    this.alert = new Alert($("#analyse-alert"));
    this.board = new Board($("#analyse-board"), { name: "Analysis board", onMove: (m) => this.play(m) });
    this.game = GAMES.connect4;
    this.position = new Position(this.game);
    this.redo = []; // moves undone, last undone last
    this.results = new Map(); // "game:mode:moves" -> the analysis result
    this.progress = null; // latest progress of the running search
    this.streamed = []; // depths of the progress events received for the current position
    this.running = null; // {key, stop}
    this.timer = null;
    this.failed = null; // {key, message}: the last analysis error
    this.stamp = 0; // bumps on each new search, so late answers of old ones are dropped

    $("#an-undo").addEventListener("click", () => this.undo());
    $("#an-redo").addEventListener("click", () => this.redoMove());
    $("#an-start").addEventListener("click", () => this.toStart());
    $("#an-copy").addEventListener("click", () => this.copyLink());
    $("#an-game").addEventListener("change", () => {
      this.setPosition(new Position(GAMES[$("#an-game").value]));
    });
    $("#an-mode").addEventListener("change", () => this.analyse());
    $("#analyse-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.paste($("#an-moves").value);
    });
  }

  get mode() {
    return $("#an-mode").value;
  }

  key(position = this.position) {
    return `${position.game.name}:${this.mode}:${position.notation()}`;
  }

  /** Show `notation` of `gameName` (from the address). */
  open(gameName, notation) {
    const game = GAMES[gameName];
    if (!game) {
      this.alert.show(`'${gameName}': unknown game (known: ${Object.keys(GAMES).join(", ")})`);
      this.setPosition(new Position(this.game));
      return;
    }
    if (game === this.game && notation === this.position.notation() && this.board.game) {
      this.render();
      return;
    }
    this.paste(notation, game);
  }

  /**
   * Show the position of move string `text`. A string the rules refuse is sent to
   * the service anyway, so the message shown is the API's own (the engine's
   * wording, naming the bad move and its index); the board stays as it was.
   */
  async paste(text, game = GAMES[$("#an-game").value]) {
    const notation = text.replace(/[\s,]+/g, "");
    let position;
    try {
      position = Position.parse(game, notation);
    } catch (err) {
      if (!(err instanceof RulesError)) throw err;
      let message = err.message;
      try {
        await request("POST", "/v1/analyses", { game: game.name, position: notation, mode: "solve" });
      } catch (apiErr) {
        if (apiErr instanceof ApiError && apiErr.status === 422) message = apiErr.message;
      }
      this.alert.show(message);
      if (this.game !== game) this.setPosition(new Position(game));
      else this.render();
      $("#an-moves").value = text;
      $("#an-moves").setAttribute("aria-invalid", "true");
      return;
    }
    this.alert.clear();
    $("#an-moves").removeAttribute("aria-invalid");
    this.setPosition(position);
  }

  setPosition(position, { keepRedo = false } = {}) {
    this.game = position.game;
    this.position = position;
    if (!keepRedo) this.redo = [];
    $("#an-game").value = this.game.name;
    $("#an-moves").value = position.notation();
    $("#an-moves").removeAttribute("aria-invalid");
    const hash = analyseHash(this.game, position.notation());
    if (location.hash !== hash || location.search) {
      history.replaceState(null, "", location.pathname + hash);
    }
    $("#tab-analyse").href = hash;
    this.analyse();
  }

  play(move) {
    if (!this.position.canPlay(move)) return;
    const next = this.position.copy();
    next.play(move);
    const redoing = this.redo.length && this.redo[this.redo.length - 1] === move;
    const redo = redoing ? this.redo.slice(0, -1) : [];
    this.setPosition(next, { keepRedo: true });
    this.redo = redo;
    this.render();
  }

  /** Play `moves` (in notation) from the current position, as one step. */
  playLine(moves) {
    const next = this.position.copy();
    for (const name of moves) {
      const move = Number(name) - 1;
      if (!next.canPlay(move)) break;
      next.play(move);
    }
    this.setPosition(next);
  }

  undo() {
    if (!this.position.ply) return;
    const prev = this.position.copy();
    this.redo.push(prev.undo());
    this.setPosition(prev, { keepRedo: true });
  }

  redoMove() {
    if (!this.redo.length) return;
    const next = this.position.copy();
    next.play(this.redo.pop());
    this.setPosition(next, { keepRedo: true });
  }

  toStart() {
    const start = this.position.copy();
    while (start.ply) this.redo.push(start.undo());
    this.setPosition(start, { keepRedo: true });
  }

  async copyLink() {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.alert.show(`Link copied: ${url}`, { kind: "info" });
    } catch {
      this.alert.show(`Link to this position: ${url}`, { kind: "info" });
    }
  }

  /** Ask the service for the current position's scores (unless known or over). */
  analyse() {
    this.stop();
    this.progress = null;
    this.streamed = [];
    const key = this.key();
    if (this.failed && this.failed.key !== key) this.failed = null;
    this.render();
    if (this.position.over || this.results.has(key)) return;
    const stamp = ++this.stamp;
    // A short pause, so clicking through several moves asks only for the last position.
    this.timer = setTimeout(() => this.submit(key, stamp), 120);
  }

  stop() {
    clearTimeout(this.timer);
    this.running?.stop();
    this.running = null;
  }

  async submit(key, stamp) {
    const position = this.position.copy();
    const body = { game: position.game.name, position: position.notation(), moves: "all", mode: this.mode };
    if (body.mode === "time") body.time_ms = 1000;
    const retry = (err) => {
      this.alert.show(errorText(err), { retryIn: err.retryAfter || 3 });
      this.timer = setTimeout(() => {
        if (stamp === this.stamp) this.submit(key, stamp);
      }, (err.retryAfter || 3) * 1000);
    };
    try {
      const job = await request("POST", "/v1/analyses", body);
      if (stamp !== this.stamp) return;
      if (job.status === "done" && job.result) {
        this.finish(key, job.result);
        return;
      }
      this.running = {
        key,
        stop: followAnalysis(job.id, {
          onProgress: (progress) => {
            if (stamp !== this.stamp) return;
            this.progress = progress;
            this.streamed.push(progress.depth);
            this.render();
          },
          onResult: (analysis) => {
            if (stamp === this.stamp) this.finish(key, analysis.result);
          },
          onError: (err) => {
            if (stamp !== this.stamp) return;
            if (err instanceof ApiError && err.transient) {
              this.alert.show(errorText(err), { retryIn: err.retryAfter || 3 });
            } else {
              this.failed = { key, message: errorText(err) };
              this.alert.show(`The analysis failed: ${errorText(err)}`);
              this.running = null;
              this.render();
            }
          },
        }),
      };
    } catch (err) {
      if (stamp !== this.stamp) return;
      if (err instanceof ApiError && err.transient) {
        retry(err);
      } else {
        this.failed = { key, message: errorText(err) };
        this.alert.show(errorText(err));
        this.render();
      }
    }
  }

  finish(key, result) {
    this.results.set(key, result);
    this.running = null;
    this.progress = null;
    if (this.alert.node.classList.contains("error") && !this.failed) this.alert.clear();
    this.render();
  }

  render() {
    const position = this.position;
    const game = this.game;
    const result = this.results.get(this.key());
    const searching = !result && !position.over && !this.failed;
    let scores = null;
    let best = [];
    if (result && result.moves) {
      scores = {};
      for (const [name, score] of Object.entries(result.moves)) scores[Number(name) - 1] = score;
      const top = Math.max(...Object.values(scores));
      best = Object.keys(scores)
        .filter((m) => scores[m] === top)
        .map(Number);
    }
    this.board.setGame(game);
    this.board.update(position, { scores, exact: result ? result.exact : true, best, pending: searching });

    const mover = game.sides[position.sideToMove];
    const other = game.sides[1 - position.sideToMove];
    let status;
    if (position.outcome) {
      const w = position.outcome.winner;
      status = w === null ? "Draw: the board is full." : `${game.sides[w]} won with ${game.kind === "columns" ? "four" : "three"} in a row.`;
    } else {
      status = `${mover} to move · move ${position.ply + 1}`;
    }
    $("#analyse-status").textContent = status;

    const verdict = $("#an-verdict");
    verdict.className = "verdict";
    if (position.over) {
      verdict.textContent = "The game is over.";
    } else if (result) {
      const meaning = describeScore(game, position.ply, result.score, result.exact);
      verdict.classList.add(meaning.kind);
      if (meaning.kind === "win") verdict.textContent = `${mover} wins with its ${ordinal(meaning.n)} move from now.`;
      else if (meaning.kind === "loss") verdict.textContent = `${other} wins with its ${ordinal(meaning.n)} move from now.`;
      else if (meaning.kind === "draw") verdict.textContent = "Draw with best play.";
      else verdict.textContent = `Not solved: estimate ${meaning.short} for ${mover} (depth ${result.depth}).`;
      verdict.title = `score ${result.score}${result.note ? ` · ${result.note}` : ""}`;
    } else if (this.failed) {
      verdict.textContent = "No evaluation.";
    } else {
      const p = this.progress;
      verdict.classList.add("searching");
      verdict.textContent = p
        ? `Searching… depth ${p.depth}, ${p.exact ? "score" : "estimate"} ${signed(p.score)}`
        : "Searching…";
      if (p && p.time_ms > 5000 && this.mode === "solve") {
        $("#an-note").textContent =
          "Solving an opening exactly can take up to a minute. For an estimate now, choose Search: Quick.";
        $("#an-note").hidden = false;
      }
    }

    const pvNode = $("#an-pv");
    const pv = result ? result.pv : this.progress ? this.progress.pv : [];
    pvNode.replaceChildren();
    if (!position.over && pv && pv.length) {
      pv.forEach((move, i) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `pv-move ${game.kind} p${(position.ply + i) % 2}`;
        button.textContent = move;
        const who = game.sides[(position.ply + i) % 2];
        button.setAttribute("aria-label", `Play the line to ${who}'s ${game.unit} ${move}`);
        button.title = `${who} plays ${move}: click to play the line up to here`;
        button.addEventListener("click", () => this.playLine(pv.slice(0, i + 1)));
        pvNode.append(button);
      });
    } else {
      pvNode.textContent = "—";
    }
    const stats = result || this.progress;
    $("#an-stats").textContent = stats && !position.over ? statsLine(stats, !!result) : "";
    const note = $("#an-note");
    if (!searching) {
      note.textContent = result?.note && !position.over ? `Note: ${result.note}` : "";
      note.hidden = !note.textContent;
    } else if (!(this.progress && this.progress.time_ms > 5000 && this.mode === "solve")) {
      note.hidden = true;
    }

    $("#an-undo").disabled = position.ply === 0;
    $("#an-start").disabled = position.ply === 0;
    $("#an-redo").disabled = this.redo.length === 0;
  }
}

function signed(n) {
  return n > 0 ? `+${n}` : String(n);
}

function statsLine(s, done) {
  const parts = [];
  if (s.depth !== undefined) parts.push(`depth ${s.depth}`);
  if (s.nodes !== undefined) parts.push(`${formatCount(s.nodes)} nodes`);
  if (s.time_ms !== undefined) parts.push(`${formatTime(s.time_ms)}`);
  if (done && s.cache) parts.push(s.cache === "hit" ? "cache hit" : "cache miss");
  if (done && s.worker) parts.push(`worker ${s.worker}`);
  return parts.join(" · ");
}

function formatCount(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)} k`;
  return String(n);
}

function formatTime(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

// -- keyboard --------------------------------------------------------------------------

function onKey(event) {
  const target = event.target;
  if (event.altKey || event.metaKey || (event.ctrlKey && !["z", "y"].includes(event.key))) return;
  if (target.closest && target.closest("input, select, textarea")) return;
  const analysing = !$("#analyse-view").hidden;
  const view = analysing ? analyser : player;
  const game = view.game;
  if (/^[1-9]$/.test(event.key)) {
    const move = Number(event.key) - 1;
    const count = game.kind === "columns" ? game.width : game.width * game.height;
    if (move < count) {
      event.preventDefault();
      if (analysing) analyser.play(move);
      else player.move(move);
    }
    return;
  }
  if (!analysing) return;
  const onBoard = target.closest && target.closest(".board");
  if ((event.key === "ArrowLeft" && !onBoard) || event.key === "Backspace" || (event.ctrlKey && event.key === "z")) {
    event.preventDefault();
    analyser.undo();
  } else if ((event.key === "ArrowRight" && !onBoard) || (event.ctrlKey && event.key === "y")) {
    event.preventDefault();
    analyser.redoMove();
  } else if (event.key === "Home" && !onBoard) {
    event.preventDefault();
    analyser.toStart();
  }
}

// -- start -----------------------------------------------------------------------------

const player = new Player();
const analyser = new Analyser();
window.addEventListener("hashchange", route);
document.addEventListener("keydown", onKey);
route();
// For the browser tests and the curious: the page's state, read-only by convention.
window.plybot = { player, analyser };
