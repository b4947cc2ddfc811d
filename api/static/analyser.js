// The analysis view: explore positions as a tree of moves; the service scores each one.
//
// Honesty rules (issue 11): a proven result reads as one ("win in 5"); an estimate of a
// limited search never does ("est. +2", neutral colour, nothing outlined as best); while a
// solve runs, the headline only counts time (it never jumps back), and each column's chip
// fills in as soon as something about it is proven (per-column progress, when the service
// sends it), else all of them at the end.

import { ApiError, analyseOnce, cancelAnalysis, followAnalysis, request } from "./api.js";
import { $, Alert, errorText, isPassing } from "./alert.js";
import { Board } from "./board.js";
import { MoveTree } from "./movetree.js";
import { GRADES, bestChoice, gradeMove, moveFacts, reviewGame, verdictOf } from "./grading.js";
import { botMove } from "./playon.js";
import { ImportError, gameRecord, parseImport } from "./record.js";
import { drawAccuracy, drawGraph, plyAt } from "./review.js";
import { GAMES, Position, RulesError, ordinal } from "./rules.js";

/** Moves of the best line shown: enough to see the plan, the same length whether the
 * answer came from the cache (whose line is its best move only: the page lengthens it,
 * see extendLine) or a solve (a line to the end of the game). */
export const PV_SHOWN = 10;

/** Seconds the service may take for one more move of a short best line (extendLine). */
const LINE_WAIT_S = 5;

const HIDE_KEY = "plybot.hideScores";

export function analyseHash(game, notation, review = false) {
  return `#/analyse/${game.name}/${notation}${review ? "/review" : ""}`;
}

/**
 * Per-column data of a progress event, as marks for the board (see Board.update). The
 * analysis API may send, while a solve runs, `moves` ({move: score}, each proven) and/or
 * `bounds` ({move: [lower, upper]} or {move: {lower, upper}}): whatever arrives is shown.
 */
export function progressMarks(progress) {
  const marks = {};
  for (const [name, value] of Object.entries(progress?.bounds || {})) {
    const lo = Array.isArray(value) ? value[0] : value?.lower ?? value?.lo;
    const hi = Array.isArray(value) ? value[1] : value?.upper ?? value?.hi;
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) continue;
    // Bounds that meet are that column's exact score, solved while the others go on.
    marks[Number(name) - 1] = lo === hi ? { score: lo, exact: true } : { lo, hi };
  }
  for (const [name, value] of Object.entries(progress?.moves || {})) {
    if (Number.isFinite(value)) marks[Number(name) - 1] = { score: value, exact: true };
    else if (value && Number.isFinite(value.score)) marks[Number(name) - 1] = { score: value.score, exact: value.exact !== false };
  }
  return marks;
}

export class Analyser {
  constructor() {
    this.alert = new Alert($("#analyse-alert"));
    this.board = new Board($("#analyse-board"), { name: "Analysis board", onMove: (m) => this.play(m) });
    this.game = GAMES.connect4;
    this.tree = new MoveTree();
    this.position = new Position(this.game);
    this.results = new Map(); // "game:mode:moves" -> the analysis result
    this.partial = new Map(); // "game:mode:moves" -> {move: mark} from per-column progress
    this.lines = new Map(); // "game:mode:moves" -> the best line, lengthened (extendLine)
    this.lineAnswers = new Map(); // "game:solve:moves" -> a best-move-only answer (extendLine)
    this.progress = null; // latest progress of the running search
    this.streamed = []; // depths of the progress events received for the current position
    this.running = null; // {key, id, stop, done}
    this.timer = null;
    this.ticker = null; // redraws the elapsed time of a running solve
    this.startedAt = 0;
    this.failed = null; // {key, message}: the last analysis error
    this.waiting = null; // why no search runs while the page waits to ask again, or null
    this.invalid = null; // why the position asked for (a link, a paste) is not legal
    this.stamp = 0; // bumps on each new search, so late answers of old ones are dropped
    this.review = null; // {line, index, total, controller, error}
    this.playOn = null; // {level, botSide, controller, thinking}: playing on against plybot
    this.hideScores = localStorage.getItem(HIDE_KEY) === "1";
    $("#an-hide").checked = this.hideScores;

    $("#an-undo").addEventListener("click", () => this.undo());
    $("#an-redo").addEventListener("click", () => this.redoMove());
    $("#an-start").addEventListener("click", () => this.toStart());
    $("#an-copy").addEventListener("click", () => this.copyLink());
    $("#an-best").addEventListener("click", () => this.playBest());
    $("#an-flip").addEventListener("click", () => this.flip());
    for (const what of ["moves", "link", "record"]) {
      $(`#an-export-${what}`).addEventListener("click", () => this.exportText(what));
    }
    $("#an-import-go").addEventListener("click", () => this.importGame());
    // The same levels as the Play view's (one list, in its form).
    $("#an-playon-level").replaceChildren(...[...$("#play-level").options].map((o) => o.cloneNode(true)));
    $("#an-playon").addEventListener("click", () => this.startPlayOn());
    $("#an-playon-stop").addEventListener("click", () => this.stopPlayOn());
    const graph = $("#an-graph");
    graph.addEventListener("click", (e) => {
      if (this.review) this.goToPly(plyAt(graph, e.clientX, this.review.line.length + 1));
    });
    graph.addEventListener("keydown", (e) => {
      if (!this.review) return;
      const last = this.review.line.length;
      const now = Number(graph.getAttribute("aria-valuenow") || 0);
      const to = { ArrowLeft: now - 1, ArrowDown: now - 1, ArrowRight: now + 1, ArrowUp: now + 1, Home: 0, End: last }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      e.stopPropagation(); // the page's own arrow keys (undo, redo) must not act too
      this.goToPly(Math.max(0, Math.min(last, to)));
      graph.focus();
    });
    $("#an-review").addEventListener("click", () => this.startReview());
    $("#an-hide").addEventListener("change", () => {
      this.hideScores = $("#an-hide").checked;
      localStorage.setItem(HIDE_KEY, this.hideScores ? "1" : "0");
      this.render();
    });
    $("#an-game").addEventListener("change", () => {
      this.newTree(GAMES[$("#an-game").value], []);
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

  keyFor(mode, game, notation) {
    return `${game.name}:${mode}:${notation}`;
  }

  key(position = this.position) {
    return this.keyFor(this.mode, position.game, position.notation());
  }

  /** Show `notation` of `gameName` (from the address); `review` starts a game review. */
  open(gameName, notation, review = false) {
    const game = GAMES[gameName];
    if (!game) {
      this.invalid = `'${gameName}': unknown game (known: ${Object.keys(GAMES).join(", ")})`;
      this.alert.show(this.invalid, { cause: "link" });
      this.stop();
      this.render();
      return;
    }
    const same = game === this.game && notation === this.position.notation() && this.board.game && !this.invalid;
    if (!same) this.paste(notation, game, { fromLink: true });
    else this.render();
    if (review && !this.invalid) this.startReview();
  }

  /**
   * Show the position of move string `text`. A string the rules refuse is sent to the
   * service anyway, so the message shown is the API's own (the engine's wording, naming
   * the bad move and its index); the board stays as it was and nothing is searched.
   */
  async paste(text, game = GAMES[$("#an-game").value], { fromLink = false } = {}) {
    const notation = text.replace(/[\s,]+/g, "");
    let position;
    try {
      position = Position.parse(game, notation);
    } catch (err) {
      if (!(err instanceof RulesError)) throw err;
      let message = err.message;
      this.stop();
      this.invalid = message; // "No evaluation" at once, not "Searching…"
      if (game !== this.game) this.newTree(game, [], { analyse: false });
      this.render();
      try {
        await request("POST", "/v1/analyses", { game: game.name, position: notation, mode: "solve" });
      } catch (apiErr) {
        if (apiErr instanceof ApiError && apiErr.status === 422) message = apiErr.message;
      }
      this.invalid = fromLink ? `This link's position is not legal: ${message}` : message;
      this.alert.show(this.invalid, { cause: "position" });
      this.render();
      $("#an-moves").value = text;
      $("#an-moves").setAttribute("aria-invalid", "true");
      return;
    }
    this.alert.clear("position");
    this.alert.clear("link");
    this.invalid = null;
    $("#an-moves").removeAttribute("aria-invalid");
    if (game !== this.game) this.newTree(game, position.moves);
    else {
      this.tree.goToLine(position.moves);
      this.tree.remember();
      this.setPosition(position);
    }
  }

  newTree(game, moves, { analyse = true } = {}) {
    this.cancelReview();
    this.playOn?.controller.abort();
    this.playOn = null;
    this.game = game;
    this.tree = new MoveTree();
    this.tree.goToLine(moves);
    const position = new Position(game);
    for (const m of moves) position.play(m);
    if (analyse) this.setPosition(position);
    else {
      this.position = position;
      this.board.setGame(game);
    }
  }

  /** Make `position` (the tree's current node) the one shown and analysed. */
  setPosition(position) {
    this.game = position.game;
    this.position = position;
    this.alert.clear("key");
    this.alert.clear("copy"); // the link copied was the previous position's
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

  /** Show the tree's current node. */
  goToCurrent() {
    const position = new Position(this.game);
    for (const m of this.tree.current.path()) position.play(m);
    this.invalid = null;
    this.alert.clear("position");
    this.alert.clear("link");
    this.setPosition(position);
  }

  play(move) {
    if (this.playOn?.thinking) {
      this.alert.show("plybot is thinking: your move comes after its reply.", { kind: "info", cause: "key" });
      return;
    }
    if (this.invalid) {
      this.invalid = null;
      this.alert.clear("position");
      this.alert.clear("link");
    }
    if (!this.position.canPlay(move)) {
      if (!this.position.over) {
        const what = this.game.kind === "columns" ? `Column ${move + 1} is full` : `Cell ${move + 1} is taken`;
        this.alert.show(`${what}: choose another move.`, { kind: "info", cause: "key" });
      }
      return;
    }
    this.tree.play(move);
    this.tree.remember();
    this.goToCurrent();
    this.botTurn();
  }

  // -- playing on against plybot --------------------------------------------------------

  /** Play on from the position shown: the person has the side to move, plybot the other,
   * at the level chosen (playon.js). */
  startPlayOn() {
    if (this.position.over || this.invalid) return;
    this.stopPlayOn();
    const level = $("#an-playon-level").value;
    this.playOn = { level, botSide: 1 - this.position.sideToMove, controller: new AbortController(), thinking: false };
    this.render();
  }

  stopPlayOn() {
    this.playOn?.controller.abort();
    this.playOn = null;
    this.render();
  }

  /** plybot's reply, when playing on and it is its turn; it joins the move tree. */
  async botTurn() {
    const game = this.playOn;
    if (!game || this.position.over || this.position.sideToMove !== game.botSide) return;
    const at = this.tree.current;
    game.thinking = true;
    this.render();
    let move;
    try {
      move = await botMove(this.game, this.position.notation(), game.level, { signal: game.controller.signal });
    } catch (err) {
      if (err.name === "AbortError" || this.playOn !== game) return;
      game.thinking = false;
      this.alert.show(`plybot could not move: ${errorText(err)}`, { cause: "playon" });
      this.render();
      return;
    }
    if (this.playOn !== game) return;
    game.thinking = false;
    if (this.tree.current !== at || move === null) {
      this.render(); // the person went elsewhere meanwhile: no reply there
      return;
    }
    this.tree.play(Number(move) - 1);
    this.tree.remember();
    this.goToCurrent();
  }

  /** Play `moves` (in notation) from the current position, as one step. */
  playLine(moves) {
    for (const name of moves) {
      const move = Number(name) - 1;
      const path = this.tree.current.path();
      const probe = new Position(this.game);
      for (const m of path) probe.play(m);
      if (!probe.canPlay(move)) break;
      this.tree.play(move);
    }
    this.tree.remember();
    this.goToCurrent();
  }

  /** The best move of the result shown (the "play best move" control and key). */
  playBest() {
    const { move } = bestChoice(this.results.get(this.key()));
    if (move === null || this.position.over) return;
    this.play(Number(move) - 1);
  }

  /** Mirror the board (the button and F). */
  flip() {
    this.board.setFlipped(!this.board.flipped);
    $("#an-flip").setAttribute("aria-pressed", String(this.board.flipped));
  }

  undo() {
    if (!this.position.ply) return;
    this.tree.back();
    this.goToCurrent();
  }

  redoMove() {
    if (!this.tree.forward()) return;
    this.goToCurrent();
  }

  toStart() {
    this.tree.current = this.tree.root;
    this.goToCurrent();
  }

  async copyLink() {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.alert.show(`Link copied: ${url}`, { kind: "info", cause: "copy" });
    } catch {
      this.alert.show(`Link to this position: ${url}`, { kind: "info", cause: "copy" });
    }
  }

  /** Ask the service for the current position's scores (unless known or over). */
  analyse() {
    this.stop();
    this.progress = null;
    this.streamed = [];
    // A new search's clock starts now, before anything is drawn: the headline must never
    // show the previous search's time (or its "can take a minute" note).
    this.startedAt = performance.now();
    this.waiting = null;
    const key = this.key();
    if (this.failed && this.failed.key !== key) this.failed = null;
    this.render();
    if (this.position.over || this.results.has(key) || this.invalid) return;
    const stamp = ++this.stamp;
    this.ticker = setInterval(() => this.renderHeadline(), 1000);
    // A short pause, so clicking through several moves asks only for the last position.
    this.timer = setTimeout(() => this.submit(key, stamp), 120);
  }

  /**
   * Stop following the running analysis and cancel it on the server: the page no longer
   * shows it (another position, the other view, the page closed), so no worker should
   * go on with it.
   */
  stop() {
    clearTimeout(this.timer);
    clearInterval(this.ticker);
    this.ticker = null;
    this.stamp++;
    const running = this.running;
    this.running = null;
    if (running) {
      running.stop?.();
      if (running.id && !running.done) cancelAnalysis(running.id);
    }
  }

  /** The view is left (the Play tab, or the page goes away). */
  leave() {
    this.stop();
    this.cancelReview();
    this.playOn?.controller.abort();
    this.playOn = null;
  }

  async submit(key, stamp) {
    const position = this.position.copy();
    const body = { game: position.game.name, position: position.notation(), moves: "all", mode: this.mode };
    if (body.mode === "time") body.time_ms = 1000;
    const retry = (err) => {
      // Nothing runs while the page waits to ask again: the headline says so, and the
      // search's clock starts over once the service takes the request.
      this.waiting = errorText(err);
      this.renderHeadline();
      this.alert.show(errorText(err), { retryIn: err.retryAfter || 3, cause: "service" });
      this.timer = setTimeout(() => {
        if (stamp === this.stamp) this.submit(key, stamp);
      }, (err.retryAfter || 3) * 1000);
    };
    const running = { key, id: null, stop: null, done: false };
    this.running = running;
    try {
      const job = await request("POST", "/v1/analyses", body);
      running.id = job.id;
      if (stamp !== this.stamp) {
        // The position changed while the request was on its way: nobody wants it now.
        if (job.status !== "done") cancelAnalysis(job.id);
        return;
      }
      this.alert.clear("service");
      if (this.waiting !== null) {
        this.waiting = null;
        this.startedAt = performance.now();
        this.renderHeadline();
      }
      if (job.status === "done" && job.result) {
        running.done = true;
        this.finish(key, job.result);
        return;
      }
      running.stop = followAnalysis(job.id, {
        onProgress: (progress) => {
          if (stamp !== this.stamp) return;
          this.alert.clear("service"); // the service answers again: the outage message goes
          this.progress = progress;
          this.streamed.push(progress.depth);
          const marks = progressMarks(progress);
          if (Object.keys(marks).length) this.partial.set(key, { ...(this.partial.get(key) || {}), ...marks });
          this.render();
        },
        onResult: (analysis) => {
          running.done = true;
          if (stamp === this.stamp) this.finish(key, analysis.result);
        },
        onError: (err) => {
          if (stamp !== this.stamp) return;
          if (isPassing(err)) {
            this.alert.show(errorText(err), { retryIn: err.retryAfter || 3, cause: "service" });
          } else {
            running.done = true;
            this.failed = { key, message: errorText(err) };
            this.alert.show(`The analysis failed: ${errorText(err)}`, { cause: "analysis" });
            this.running = null;
            clearInterval(this.ticker);
            this.render();
          }
        },
      });
    } catch (err) {
      if (stamp !== this.stamp) return;
      if (isPassing(err)) {
        retry(err);
      } else {
        this.failed = { key, message: errorText(err) };
        this.alert.show(errorText(err), { cause: "analysis" });
        clearInterval(this.ticker);
        this.render();
      }
    }
  }

  finish(key, result) {
    this.results.set(key, result);
    this.partial.delete(key);
    this.running = null;
    this.progress = null;
    clearInterval(this.ticker);
    this.ticker = null;
    this.alert.clear("service");
    this.render();
    this.extendLine(key, this.position.copy(), result, this.stamp);
  }

  /** The line shown for `result`: the service's, lengthened when known (extendLine), or
   * the move named best alone when the search's line starts with another (bestChoice). */
  shownLine(result, choice) {
    const pv = result.pv || [];
    if (choice.move !== null && pv[0] !== choice.move) return [choice.move];
    return this.lines.get(this.key()) || pv;
  }

  /**
   * A cached answer's best line is its best move alone (the book's, a few moves); a
   * solve's runs to the end of the game (nothing to add then). So that the line has the same length everywhere, lengthen a short exact line
   * with the best lines of the positions along it, as long as the service answers them
   * within LINE_WAIT_S (the book and the cache answer at once; a position that would
   * take longer is withdrawn, so no worker is kept busy for a line). Each answer is kept, so walking the line costs
   * nothing more. Stops when the page shows another position.
   */
  async extendLine(key, position, result, stamp) {
    const line = [...(result.pv || [])];
    if (!result.exact || line.length >= PV_SHOWN || this.lines.has(key)) return;
    const game = position.game;
    const probe = position.copy();
    for (const name of line) {
      if (!probe.canPlay(Number(name) - 1)) return;
      probe.play(Number(name) - 1);
    }
    while (line.length < PV_SHOWN && !probe.over) {
      const at = this.keyFor("solve", game, probe.notation());
      let next = this.results.get(at) || this.lineAnswers.get(at);
      if (!next) {
        try {
          // Its best move only (no other move solved), answered within a short wait or
          // withdrawn: the opening book and the shared cache answer at once.
          const job = await request("POST", `/v1/analyses?wait=${LINE_WAIT_S}`, { game: game.name, position: probe.notation(), moves: "best", mode: "solve" });
          if (job.status !== "done") {
            cancelAnalysis(job.id);
            break;
          }
          next = job.result;
        } catch {
          break; // rate limit, service down: the line stays as it is
        }
        if (!next) break;
        this.lineAnswers.set(at, next);
        this.results.set(at, next);
      }
      if (stamp !== this.stamp) return;
      const more = next.exact ? next.pv || [] : [];
      const before = line.length;
      for (const name of more) {
        if (line.length >= PV_SHOWN || !probe.canPlay(Number(name) - 1)) break;
        line.push(name);
        probe.play(Number(name) - 1);
      }
      if (line.length === before) break;
    }
    if (stamp !== this.stamp || line.length <= (result.pv || []).length) return;
    this.lines.set(key, line);
    this.render();
  }

  // -- review -------------------------------------------------------------------------

  /**
   * Review the main line: solve every position on it (one at a time, so the workers stay
   * free for others) and mark each move that changed the result: a win given away, a
   * draw turned into a loss. Exact scores only; a position not solved exactly is said so.
   */
  async startReview() {
    this.cancelReview();
    const line = this.tree.mainLine();
    if (!line.length) return;
    const controller = new AbortController();
    const review = { line, index: 0, total: line.length, controller, error: null, done: false, unsure: 0 };
    this.review = review;
    this.renderReview();
    for (let i = 0; i < line.length; i++) {
      const position = new Position(this.game);
      for (const m of line.slice(0, i)) position.play(m);
      const key = this.keyFor("solve", this.game, position.notation());
      if (!this.results.has(key)) {
        try {
          const result = await analyseOnce(this.game.name, position.notation(), { signal: controller.signal });
          this.results.set(key, result);
        } catch (err) {
          if (err.name === "AbortError" || this.review !== review) return;
          review.error = errorText(err);
          this.renderReview();
          return;
        }
      }
      if (this.review !== review) return;
      if (!this.results.get(key).exact) review.unsure++;
      review.index = i + 1;
      this.render();
    }
    review.done = true;
    this.render();
  }

  cancelReview() {
    this.review?.controller.abort();
    this.review = null;
    $("#an-review-list").replaceChildren();
    $("#an-review-status").textContent = "";
  }

  /** The grade of the move at `node` (a move of the tree), when the position before it
   * has an exact solve and a review is on; else null. */
  gradeOf(node) {
    if (!this.review || this.hideScores || !node.parent) return null;
    const before = new Position(this.game);
    for (const m of node.parent.path()) before.play(m);
    const result = this.results.get(this.keyFor("solve", this.game, before.notation()));
    if (!result) return null;
    const graded = gradeMove(this.game, before.ply, result, String(node.move + 1));
    return graded.grade === "unknown" ? null : graded;
  }

  /** A reviewed move's mark for the move tree, or null (a best move, or not graded). */
  reviewMark(node) {
    const graded = this.gradeOf(node);
    if (!graded || graded.grade === "best") return null;
    const grade = GRADES[graded.grade];
    return { glyph: grade.glyph, kind: grade.kind, title: graded.text };
  }

  /** The review of the main line as far as it is solved (grading.reviewGame). */
  reviewData() {
    const line = this.review.line;
    const resultAt = (ply) => {
      const position = new Position(this.game);
      for (const m of line.slice(0, ply)) position.play(m);
      return this.results.get(this.keyFor("solve", this.game, position.notation()));
    };
    const end = new Position(this.game);
    for (const m of line) end.play(m);
    return reviewGame(this.game, line, resultAt, end.outcome);
  }

  /** The main line's node at `ply` (0: the root). */
  mainNode(ply) {
    let node = this.tree.root;
    for (let i = 0; i < ply && node.children[0]; i++) node = node.children[0];
    return node;
  }

  /** Go to position `ply` of the reviewed line (a graph point). */
  goToPly(ply) {
    this.tree.current = this.mainNode(ply);
    this.tree.remember();
    this.goToCurrent();
  }

  /** The review link of the main line (opens the same review anywhere). */
  reviewLink() {
    const moves = this.tree.mainLine().map((m) => m + 1).join("");
    return `${location.origin}${location.pathname}${analyseHash(this.game, moves, true)}`;
  }

  recordText() {
    const data = this.review?.done ? this.reviewData() : null;
    return gameRecord(this.game, this.tree.mainLine(), data, this.reviewLink());
  }

  async exportText(what) {
    const text = {
      moves: () => this.tree.mainLine().map((m) => m + 1).join(""),
      link: () => this.reviewLink(),
      record: () => this.recordText(),
    }[what]();
    const name = { moves: "Moves", link: "Review link", record: "Record" }[what];
    const shown = what === "record" ? "below" : text;
    if (what === "record") $("#an-review-card details.record").open = true;
    // Shown at once (the clipboard may refuse, or never answer without permission),
    // then said to be copied once it is.
    this.alert.show(`${name}: ${shown}`, { kind: "info", cause: "copy" });
    try {
      await navigator.clipboard.writeText(text);
      this.alert.show(`${name} copied: ${shown}`, { kind: "info", cause: "copy" });
    } catch {
      // not copied: the text shown is there to select
    }
  }

  /** Open the game pasted in the import box, and review it. */
  importGame() {
    const box = $("#an-import");
    const error = $("#an-import-error");
    let found;
    try {
      found = parseImport(box.value, GAMES[$("#an-game").value]);
      Position.parse(found.game, found.notation); // the engine's words for an illegal move
    } catch (err) {
      if (!(err instanceof ImportError || err instanceof RulesError)) throw err;
      error.textContent = err.message;
      error.hidden = false;
      box.setAttribute("aria-invalid", "true");
      return;
    }
    error.hidden = true;
    box.removeAttribute("aria-invalid");
    location.hash = analyseHash(found.game, found.notation, true);
  }

  renderReview() {
    const review = this.review;
    const status = $("#an-review-status");
    const list = $("#an-review-list");
    const card = $("#an-review-card");
    list.replaceChildren();
    card.hidden = !review || this.hideScores;
    if (!review) {
      status.textContent = "";
      return;
    }
    if (review.error) {
      status.textContent = `The review stopped: ${review.error}`;
      return;
    }
    if (!review.done) {
      status.textContent = `Reviewing… ${review.index} of ${review.total} positions solved.`;
    }
    const data = this.reviewData();
    const noted = data.moves.filter((g) => g.grade !== "best" && g.grade !== "unknown");
    const nodes = [];
    for (let n = this.tree.root.children[0]; n; n = n.children[0]) nodes.push(n);
    for (const graded of noted) {
      const node = nodes[graded.ply - 1];
      if (!node) continue;
      const item = document.createElement("li");
      item.className = GRADES[graded.grade].kind;
      item.dataset.ply = graded.ply;
      item.dataset.grade = graded.grade;
      const link = document.createElement("button");
      link.type = "button";
      link.className = "linklike";
      link.textContent = `Move ${graded.ply}, ${this.game.sides[graded.side]} ${graded.name}`;
      link.addEventListener("click", () => {
        this.tree.current = node.parent;
        this.goToCurrent();
      });
      item.append(link, ` ${GRADES[graded.grade].glyph} ${graded.text}.`);
      list.append(item);
    }
    if (!this.hideScores) {
      drawAccuracy($("#an-accuracy"), this.game, data);
      const onLine = this.tree.current.path().every((m, i) => this.review.line[i] === m);
      const ply = onLine ? this.tree.current.ply : 0;
      drawGraph($("#an-graph"), this.game, data, ply, this.review.line.map((m) => String(m + 1)));
      $("#an-record").value = this.recordText();
    }
    if (review.done) {
      const unsure = review.unsure ? ` (${review.unsure} positions could not be solved exactly in time)` : "";
      const lost = noted.filter((g) => GRADES[g.grade].kind === "blunder").length;
      const slow = noted.length - lost;
      const parts = [];
      if (lost) parts.push(`${lost} move${lost > 1 ? "s" : ""} changed the result`);
      if (slow) parts.push(`${slow} ${slow > 1 ? "were" : "was"} slower to win or quicker to lose`);
      status.textContent = this.hideScores
        ? "Review done; scores are hidden."
        : parts.length
          ? `Review done: ${parts.join("; ")}${unsure}.`
          : `Review done: every move was a best move${unsure}.`;
    }
  }

  // -- drawing --------------------------------------------------------------------------

  renderHeadline() {
    const verdict = $("#an-verdict");
    if (!verdict.classList.contains("searching")) return;
    const note = $("#an-note");
    if (this.waiting !== null) {
      verdict.textContent = "Not searching: waiting to ask the service again.";
      note.hidden = true;
      return;
    }
    const seconds = Math.floor((performance.now() - this.startedAt) / 1000);
    const marks = this.partial.get(this.key()) || {};
    const legal = this.position.legalMoves().length;
    const known = Object.values(marks).filter((m) => m.score !== undefined || m.lo === m.hi).length;
    const what = this.mode === "solve" ? "Solving exactly" : "Searching";
    const parts = [`${what}…`];
    if (known) parts.push(`${known} of ${legal} ${this.game.kind === "columns" ? "columns" : "cells"} solved`);
    if (seconds >= 1) parts.push(`${seconds} s`);
    verdict.textContent = parts.join(" · ");
    const slow = seconds >= 5 && this.mode === "solve";
    if (slow) {
      note.textContent =
        "Solving an opening exactly can take up to a minute. For an estimate now, choose Search: Quick.";
    }
    note.hidden = !slow;
  }

  render() {
    const position = this.position;
    const game = this.game;
    const key = this.key();
    const result = this.invalid ? null : this.results.get(key);
    const searching = !result && !position.over && !this.failed && !this.invalid;
    const hidden = this.hideScores;
    let marks = null;
    let best = [];
    const choice = bestChoice(result);
    if (result && result.moves) {
      marks = {};
      // What is proven of each move: its exact score (bounds that meet); else bounds that
      // decide its outcome (a proven win or loss); else only the search's estimate.
      const facts = moveFacts(result);
      for (const [name, f] of Object.entries(facts)) {
        const move = Number(name) - 1;
        if (f.exact) marks[move] = { score: f.score, exact: true };
        else if (f.lo > 0 || f.hi < 0) marks[move] = { lo: f.lo, hi: f.hi, final: true };
        else marks[move] = { score: f.score, exact: false };
      }
      // Outlined as best only when proven: its floor reaches every other move's ceiling.
      if (choice.proven) {
        const top = facts[choice.move].lo;
        best = Object.entries(facts)
          .filter(([, f]) => f.exact && f.score === top)
          .map(([name]) => Number(name) - 1);
      }
    } else if (searching && this.partial.has(key)) {
      marks = this.partial.get(key);
    }
    this.board.setGame(game);
    this.board.update(position, { marks, best, pending: searching, hidden });

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
    verdict.removeAttribute("title");
    const note = $("#an-note");
    note.hidden = true;
    if (this.invalid) {
      verdict.textContent = "No evaluation: this position is not legal.";
    } else if (position.over) {
      verdict.textContent = "The game is over.";
    } else if (hidden) {
      verdict.textContent = "Scores are hidden.";
    } else if (result) {
      verdict.textContent = verdictText(game, position.ply, result);
      const meaning = verdictOf(game, position.ply, result);
      if (["win", "loss", "draw"].includes(meaning.kind)) verdict.classList.add(meaning.kind);
      if (!result.exact) {
        // The service's own words on what is and is not proven, then what an estimate is.
        const why = result.note ? `Not exact: ${result.note}. ` : "";
        note.textContent = `${why}An estimate is a guess from a search that stopped before the end of the game; it is not a result. Choose Search: Exact for a proven one.`;
        note.hidden = false;
      }
      verdict.title = result.exact ? `score ${result.score}` : `estimate ${result.score}`;
    } else if (this.failed) {
      verdict.textContent = "No evaluation.";
    } else {
      verdict.classList.add("searching");
      verdict.textContent = "";
      this.renderHeadline();
    }

    const pvNode = $("#an-pv");
    const pv = result && !hidden ? this.shownLine(result, choice) : [];
    let label = "Best line";
    if (result && !result.exact && !choice.proven) {
      label = choice.move === (result.pv || [])[0] ? "Search's line (not proven best)" : "Best so far (not proven best)";
    }
    $("#an-pv-label").textContent = label;
    pvNode.replaceChildren();
    if (!position.over && pv.length) {
      pv.slice(0, PV_SHOWN).forEach((move, i) => {
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
      if (pv.length > PV_SHOWN) pvNode.append(` … (${pv.length - PV_SHOWN} more)`);
    } else {
      pvNode.textContent = "—";
    }
    $("#an-stats").textContent = result && !position.over ? statsLine(result) : "";

    $("#an-undo").disabled = position.ply === 0;
    $("#an-start").disabled = position.ply === 0;
    $("#an-redo").disabled = this.tree.current.children.length === 0;
    $("#an-best").disabled = !result || choice.move == null || position.over;

    this.tree.render($("#an-tree"), {
      name: (m) => String(m + 1),
      sides: game.sides,
      onPick: (node) => {
        this.tree.current = node;
        this.tree.remember();
        this.goToCurrent();
      },
      annotate: (node) => this.reviewMark(node),
    });
    this.renderReview();
    this.renderPlayOn();
  }

  renderPlayOn() {
    const game = this.playOn;
    const status = $("#an-playon-status");
    $("#an-playon").hidden = Boolean(game);
    $("#an-playon").disabled = this.position.over || Boolean(this.invalid);
    $("#an-playon-stop").hidden = !game;
    if (!game) {
      status.textContent = "";
      return;
    }
    const you = this.game.sides[1 - game.botSide];
    const vs = `You play ${you} against plybot (${game.level}).`;
    if (this.position.over) status.textContent = `${vs} The game is over.`;
    else if (game.thinking) status.textContent = `${vs} plybot is thinking…`;
    else if (this.position.sideToMove === game.botSide) status.textContent = `${vs} plybot's turn: play a move for it, or Stop.`;
    else status.textContent = `${vs} Your move.`;
  }
}

/**
 * The headline for `result` at `ply`: proven outcomes as results ("Red wins with its 5th
 * move from now."), a range when only bounds are proven, an estimate said to be one.
 */
export function verdictText(game, ply, result) {
  const mover = game.sides[ply % 2];
  const other = game.sides[1 - (ply % 2)];
  const v = verdictOf(game, ply, result);
  const when = v.fast === v.slow ? `its ${ordinal(v.fast)} move` : `its ${ordinal(v.fast)} to ${ordinal(v.slow)} move`;
  const lean = () => {
    const s = result.score;
    const who = s > 0 ? `${mover} looks better` : s < 0 ? `${other} looks better` : "looks balanced";
    return `Estimate: ${who} (est. ${s > 0 ? "+" : ""}${s}).`;
  };
  if (v.kind === "win") return `${mover} wins with ${when} from now${v.exact ? "" : " (proven; the exact count is not)"}.`;
  if (v.kind === "loss") return `${other} wins with ${when} from now${v.exact ? "" : " (proven; the exact count is not)"}.`;
  if (v.kind === "draw") return "Draw with best play.";
  if (v.kind === "draw+") return `Not solved: ${mover} has at least a draw (proven). ${lean()}`;
  if (v.kind === "draw-") return `Not solved: ${mover} cannot win (proven). ${lean()}`;
  return `Not solved. ${lean()}`;
}

/** How the result was found, in plain words (no engine jargon, no worker names). */
function statsLine(r) {
  const time = formatTime(r.time_ms);
  if (r.worker === "cache" || r.cache === "hit") {
    return r.exact ? "Known already: this position was solved before." : "Known already: estimated before.";
  }
  if (r.exact) {
    return r.nodes ? `Solved in ${time}, looking at ${formatCount(r.nodes)} positions.` : `Solved in ${time}.`;
  }
  return `Estimated in ${time} by looking ${r.depth} moves ahead.`;
}

function formatCount(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} billion`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} million`;
  if (n >= 1e4) return `${Math.round(n / 1e3)} thousand`;
  return n.toLocaleString("en");
}

function formatTime(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.max(1, Math.round(ms))} ms`;
}
