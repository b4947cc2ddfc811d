// The board: one component for both games, drawn from a Position.
//
// Connect Four: a grid of cells (role=grid, for screen readers) under a row of
// column buttons (the controls: click, Tab, arrows, Enter), over a row of score
// chips. Tic-tac-toe: a grid whose cells hold the buttons (and the scores).
// Clicking anywhere in a Connect Four column plays it too.

import { describeScore } from "./rules.js";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  node.append(...children);
  return node;
}

export class Board {
  /**
   * @param {HTMLElement} root  where the board goes
   * @param {{name: string, onMove: (move: number) => void}} options
   *   name: used in labels ("Analysis board"); onMove: a move the person chose
   */
  constructor(root, { name, onMove }) {
    this.root = root;
    this.name = name;
    this.onMove = onMove;
    this.game = null;
    this.shown = null; // the last position drawn, to animate the newest stone
    this.flipped = false; // mirrored: the last column (or cell column) on the left
    this.hovered = -1; // the move under a mouse pointer or the keyboard focus, or -1
  }

  /** Mirror the board left to right (the other player's side of a real board). */
  setFlipped(flipped) {
    this.flipped = flipped;
    this.board?.classList.toggle("flipped", flipped);
  }

  /** Build the DOM for `game` (once per game; update() then only changes it). */
  setGame(game) {
    if (this.game === game) return;
    this.game = game;
    this.shown = null;
    this.cursor = null; // index of the button that takes the focus on Tab
    const { width, height } = game;
    this.root.replaceChildren();
    const board = el("div", {
      class: `board board-${game.kind}${this.flipped ? " flipped" : ""}`,
      style: `--cols:${width};--rows:${height}`,
      // Focus waits here while no move is playable (the bot thinks, the column filled
      // was the last), instead of falling to the page's <body>.
      tabindex: "-1",
      role: "group",
      "aria-label": this.name,
    });
    this.cells = [];
    this.buttons = [];
    this.chips = [];

    if (game.kind === "columns") {
      const drops = el("div", { class: "drops", role: "toolbar", "aria-label": "Columns: play one (arrows move, Enter plays)" });
      for (let c = 0; c < width; c++) {
        const button = el("button", { type: "button", class: "drop", "data-move": c });
        button.append(el("span", { class: "drop-num", "aria-hidden": "true", text: String(c + 1) }));
        drops.append(button);
        this.buttons.push(button);
      }
      const frame = el("div", { class: "frame" });
      const grid = el("div", {
        class: "grid",
        role: "grid",
        "aria-label": `${this.name}: ${game.title}, ${width} columns by ${height} rows`,
        "aria-readonly": "true",
      });
      for (let r = 0; r < height; r++) {
        const row = el("div", { role: "row", class: "row" });
        for (let c = 0; c < width; c++) {
          const cell = el(
            "div",
            { role: "gridcell", class: "cell", "data-move": c },
            el("span", { class: "disc", "aria-hidden": "true" }),
          );
          row.append(cell);
          this.cells.push(cell);
        }
        grid.append(row);
      }
      frame.append(grid);
      const scores = el("div", { class: "scores", role: "list", "aria-label": "Column scores" });
      for (let c = 0; c < width; c++) {
        const chip = el("div", { class: "chip", role: "listitem", "data-move": c });
        scores.append(chip);
        this.chips.push(chip);
      }
      board.append(drops, frame, scores);
      grid.addEventListener("click", (e) => this.clicked(e));
      grid.addEventListener("pointerover", (e) => this.hover(e));
      grid.addEventListener("pointerleave", () => this.hover(null));
      drops.addEventListener("pointerover", (e) => this.hover(e));
      drops.addEventListener("pointerleave", () => this.hover(null));
      drops.addEventListener("focusin", (e) => this.hover(e));
      drops.addEventListener("focusout", () => this.hover(null));
      drops.addEventListener("click", (e) => this.clicked(e));
      drops.addEventListener("keydown", (e) => this.arrows(e, 1));
      drops.addEventListener("focusin", () => this.rove());
    } else {
      const grid = el("div", {
        class: "grid frame",
        role: "grid",
        "aria-label": `${this.name}: ${game.title}`,
      });
      for (let r = 0; r < height; r++) {
        const row = el("div", { role: "row", class: "row" });
        for (let c = 0; c < width; c++) {
          const index = r * width + c;
          const button = el(
            "button",
            { type: "button", class: "cellbtn", "data-move": index },
            // The name is this hidden text, not an aria-label: a label would have to
            // repeat the visible number, mark and chip word for word (axe's
            // label-content-name-mismatch), which reads badly.
            el("span", { class: "visually-hidden sr-name" }),
            el("span", { class: "cellnum", "aria-hidden": "true", text: String(index + 1) }),
            el("span", { class: "mark", "aria-hidden": "true" }),
            el("span", { class: "chip", "aria-hidden": "true" }),
          );
          const cell = el("div", { role: "gridcell", class: "cell" }, button);
          row.append(cell);
          this.cells.push(cell);
          this.buttons.push(button);
          this.chips.push(button.querySelector(".chip"));
        }
        grid.append(row);
      }
      board.append(grid);
      grid.addEventListener("click", (e) => this.clicked(e));
      grid.addEventListener("keydown", (e) => this.arrows(e, width));
      grid.addEventListener("focusin", () => this.rove());
    }
    this.root.append(board);
    this.board = board;
  }

  clicked(event) {
    const target = event.target.closest("[data-move]");
    if (!target || !this.position) return;
    const move = Number(target.dataset.move);
    if (this.disabled || !this.position.canPlay(move)) return;
    this.onMove(move);
  }

  /**
   * Show where a move would land: under a mouse pointer, or at the keyboard's focus. A
   * touch or a pen shows nothing: a tap plays at once, and a ghost left behind by it
   * would stay on the board (nothing "leaves" a touch screen's column).
   */
  hover(event) {
    let target = event && event.target.closest && event.target.closest("[data-move]");
    if (event?.pointerType && event.pointerType !== "mouse") target = null;
    if (event?.type === "focusin" && !(target && target.matches(":focus-visible"))) target = null;
    this.hovered = target ? Number(target.dataset.move) : -1;
    this.drawHover();
  }

  drawHover() {
    const move = this.hovered;
    this.board.dataset.hover = move;
    const position = this.position;
    const ghost = position && !this.disabled && move >= 0 ? position.target(move) : -1;
    this.cells.forEach((cell, i) => {
      cell.classList.toggle("hover", move >= 0 && i % this.game.width === move);
      cell.classList.toggle("ghost", i === ghost);
    });
  }

  /**
   * Arrow keys move the focus between the playable buttons (`stride` = buttons per
   * row), so the board is a single stop in the Tab order (a "roving" tabindex).
   */
  arrows(event, stride) {
    const steps = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -stride, ArrowDown: stride };
    if (!(event.key in steps) || (stride === 1 && Math.abs(steps[event.key]) !== 1)) return;
    let index = this.buttons.indexOf(document.activeElement);
    if (index < 0) return;
    event.preventDefault();
    // A mirrored board reverses left and right on the screen, so the keys follow it.
    const mirrored = this.flipped && (event.key === "ArrowLeft" || event.key === "ArrowRight");
    const step = mirrored ? -steps[event.key] : steps[event.key];
    for (index += step; index >= 0 && index < this.buttons.length; index += step) {
      if (!this.buttons[index].disabled) {
        this.buttons[index].focus();
        return;
      }
    }
  }

  /** Keep exactly one enabled button in the Tab order: the cursor, or the nearest one. */
  rove() {
    const enabled = this.buttons.filter((b) => !b.disabled);
    const focused = this.buttons.indexOf(document.activeElement);
    if (focused >= 0) this.cursor = focused;
    const centre = Math.floor(this.buttons.length / 2);
    const wanted = this.cursor ?? centre;
    let best = null;
    for (const button of enabled) {
      const i = this.buttons.indexOf(button);
      if (best === null || Math.abs(i - wanted) < Math.abs(this.buttons.indexOf(best) - wanted)) {
        best = button;
      }
    }
    for (const button of this.buttons) button.tabIndex = button === best ? 0 : -1;
  }

  /** Focus `move`'s button, or the nearest playable one (or the board, with none). */
  focusMove(move) {
    const button = this.buttons[move];
    if (button && !button.disabled) button.focus();
    else this.focusNear(move);
  }

  /** Keep the keyboard's focus on the board: the playable button nearest `index`, else the
   * board itself. */
  focusNear(index) {
    let best = null;
    this.buttons.forEach((button, i) => {
      if (!button.disabled && (best === null || Math.abs(i - index) < Math.abs(best - index))) best = i;
    });
    if (best === null) this.board.focus({ preventScroll: true });
    else {
      this.cursor = best;
      this.buttons[best].focus({ preventScroll: true });
    }
  }

  /**
   * Draw `position`.
   * options: disabled (no moves accepted),
   * marks ({move: mark} from the side to move; null hides the chips), where a mark is
   *   {score, exact: true} (a proven game result), {score, exact: false} (an estimate of
   *   a limited search: never outlined as best), or {lo, hi} (proven bounds, lo <= score
   *   <= hi, while a solve narrows them down),
   * best (moves proven best: outlined), pending (a search is on: unmarked playable
   * moves show "…"), hidden (scores hidden for practice: chips and labels say nothing).
   */
  update(position, options = {}) {
    const { disabled = false, marks = null, best = [], pending = false, hidden = false } = options;
    const game = this.game;
    const previous = this.shown;
    // The button with the focus may be disabled below (its column just filled): the
    // focus then moves to the nearest playable one instead of falling to <body>.
    const focused = this.buttons.indexOf(document.activeElement);
    this.position = position;
    this.disabled = disabled || position.over;
    this.board.classList.toggle("disabled", this.disabled);
    this.board.classList.toggle("over", position.over);
    this.board.dataset.turn = position.sideToMove;
    const newest =
      previous && position.ply === previous.ply + 1 &&
      previous.moves.every((m, i) => m === position.moves[i])
        ? position.moves.length - 1
        : -1;
    const lastCell = position.ply ? this.cellOf(position, position.ply - 1) : -1;
    const winning = new Set(position.winLine || []);
    const { width, height } = game;

    this.cells.forEach((cell, i) => {
      const who = position.cells[i];
      const disc = game.kind === "columns" ? cell.firstChild : cell.querySelector(".mark");
      disc.className = `${game.kind === "columns" ? "disc" : "mark"}${who === null ? "" : ` p${who}`}`;
      if (game.kind === "cells") disc.textContent = who === null ? "" : game.sides[who];
      cell.classList.toggle("last", i === lastCell);
      cell.classList.toggle("win", winning.has(i));
      cell.classList.remove("ghost");
      const row = Math.floor(i / width);
      const col = i % width;
      const state = who === null ? "empty" : game.sides[who];
      if (game.kind === "columns") {
        cell.setAttribute("aria-label", `Column ${col + 1}, row ${height - row}: ${state}`);
      }
      if (newest >= 0 && i === lastCell) {
        disc.style.setProperty("--fall", row + 1);
        disc.classList.add("falling");
      }
    });

    const shown = hidden ? null : marks;
    const meanings = this.buttons.map((_, move) =>
      shown && move in shown ? describeMark(game, position.ply, shown[move]) : null,
    );
    const best_ = new Set(hidden ? [] : best);
    this.buttons.forEach((button, move) => {
      const playable = position.canPlay(move);
      button.disabled = this.disabled || !playable;
      const meaning = meanings[move];
      const what = game.kind === "columns" ? `column ${move + 1}` : `cell ${move + 1}`;
      let label;
      if (game.kind === "cells" && position.cells[move] !== null) {
        label = `Cell ${move + 1}: ${game.sides[position.cells[move]]}`;
      } else if (!playable) {
        label = `${capital(what)}: ${position.over ? "game over" : "full"}`;
      } else {
        label = `Play ${what}`;
        if (meaning) label += `: ${meaning.text}${best_.has(move) ? " (best)" : ""}`;
      }
      if (game.kind === "cells") button.querySelector(".sr-name").textContent = label;
      else button.setAttribute("aria-label", label);
    });

    this.chips.forEach((chip, move) => {
      const mark = shown && move in shown ? shown[move] : null;
      const meaning = meanings[move];
      chip.className = "chip";
      chip.replaceChildren();
      delete chip.dataset.score;
      delete chip.dataset.bound;
      if (mark && mark.score !== undefined && mark.score !== null) chip.dataset.score = mark.score;
      if (meaning?.bound) chip.dataset.bound = `${mark.lo}..${mark.hi}`;
      if (hidden || (marks === null && !pending)) {
        chip.classList.add("hidden");
        chip.removeAttribute("title");
        chip.removeAttribute("aria-label");
        return;
      }
      if (!meaning) {
        if (pending && position.canPlay(move)) {
          chip.classList.add("pending");
          chip.append(el("span", { class: "chip-n", text: "…" }));
        }
        if (game.kind === "columns") {
          chip.setAttribute("aria-label", `Column ${move + 1}: ${pending && position.canPlay(move) ? "being solved" : "no score"}`);
        }
        chip.removeAttribute("title");
        return;
      }
      chip.classList.add(meaning.kind);
      if (meaning.bound) chip.classList.add("bound");
      if (best_.has(move)) chip.classList.add("best");
      chip.append(
        el("span", { class: "chip-cap", text: meaning.caption }),
        el("span", { class: "chip-n", text: meaning.short }),
      );
      const detail = mark.score !== undefined && mark.score !== null ? ` (score ${mark.score})` : "";
      const label = `${capital(game.kind === "columns" ? "column" : "cell")} ${move + 1}: ${meaning.text}${detail}`;
      chip.title = label;
      if (game.kind === "columns") chip.setAttribute("aria-label", label);
    });
    if (focused >= 0 && this.buttons[focused].disabled) this.focusNear(focused);
    this.rove();
    this.drawHover();
    this.shown = position.copy();
  }

  /** The cell filled by the `index`-th move of `position`. */
  cellOf(position, index) {
    const move = position.moves[index];
    if (this.game.kind === "cells") return move;
    let row = this.game.height - 1;
    for (let i = 0; i < index; i++) if (position.moves[i] === move) row--;
    return row * this.game.width + move;
  }
}

/**
 * What a chip says for `mark` (see update()): {kind, caption, short, text, bound}.
 * Exact: "win in 5" / "draw" / "loss in 3". Estimate: "est. +2", in the neutral colour,
 * because it is a guess of a limited search, not a result. Bounds: what is proven so
 * far ("win", "draw or better", ...); null while nothing is.
 */
export function describeMark(game, ply, mark) {
  if (!mark) return null;
  if (mark.score !== undefined && mark.score !== null) {
    const meaning = describeScore(game, ply, mark.score, mark.exact !== false);
    const caption =
      meaning.kind === "win" ? "win in" : meaning.kind === "loss" ? "loss in" : meaning.kind === "eval" ? "est." : "draw";
    return { ...meaning, caption, short: meaning.kind === "draw" ? "=" : meaning.short, bound: false };
  }
  const { lo, hi } = mark;
  if (lo === undefined || hi === undefined) return null;
  if (lo === hi) return describeMark(game, ply, { score: lo, exact: true });
  if (mark.final && (lo > 0 || hi < 0)) {
    // A search that ended with the outcome proven but not its length: say both.
    const a = describeScore(game, ply, lo, true).n;
    const b = describeScore(game, ply, hi, true).n;
    const [fast, slow] = lo > 0 ? [b, a] : [a, b];
    const kind = lo > 0 ? "win" : "loss";
    const range = Number.isFinite(fast) && Number.isFinite(slow) && fast > 0 ? `${fast}–${slow}` : "?";
    return { kind, caption: `${kind} in`, short: range, text: `a ${kind} (proven) in ${range.replace("–", " to ")} moves`, bound: true };
  }
  if (lo > 0) return { kind: "win", caption: "win", short: "…", text: "a win (its length is being solved)", bound: true };
  if (hi < 0) return { kind: "loss", caption: "loss", short: "…", text: "a loss (its length is being solved)", bound: true };
  if (lo === 0) return { kind: "draw", caption: "draw", short: "or +", text: "at least a draw (being solved)", bound: true };
  if (hi === 0) return { kind: "draw", caption: "draw", short: "or −", text: "at best a draw (being solved)", bound: true };
  return null;
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
