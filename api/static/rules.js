// The rules the page needs to draw a board and take clicks, and the wording of scores.
//
// The engine (Python) is the authority: the service checks every move again, and
// every score comes from it. These rules only let the page draw a position from
// its move string, refuse a click on a full column at once, and mark the four in
// a row. Their error messages follow the engine's wording
// ("'44444444': column 4 is full (move 7)").
//
// Score convention (the engine's, for all games): from the side to move; a decided
// position scores (max stones per side + 1) - (stones the winner has at the win),
// positive when the side to move wins, 0 for a draw. Connect Four 7x6: 22 - stones
// (Pascal Pons' benchmark convention); tic-tac-toe: 6 - marks.

export const GAMES = {
  connect4: {
    name: "connect4",
    title: "Connect Four",
    width: 7,
    height: 6,
    kind: "columns", // a move is a column; stones fall to the lowest empty cell
    unit: "column",
    sides: ["Red", "Yellow"],
  },
  tictactoe: {
    name: "tictactoe",
    title: "Tic-tac-toe",
    width: 3,
    height: 3,
    kind: "cells", // a move is a cell, 1-9 like a phone keypad
    unit: "cell",
    sides: ["X", "O"],
  },
};

/** Most stones (or marks) one side can place in a game: ceil(cells / 2). */
export function maxStones(game) {
  return Math.floor((game.width * game.height + 1) / 2);
}

export class RulesError extends Error {}

/**
 * A position with undo. Cells are indexed row * width + col, row 0 at the top
 * (tic-tac-toe's cell 1 is index 0; a Connect Four stone lands in the highest
 * free row number of its column).
 */
export class Position {
  constructor(game) {
    this.game = game;
    this.moves = [];
    this.cells = new Array(game.width * game.height).fill(null);
    this.winner = null; // 0 or 1 once someone has four (or three) in a row
    this.winLine = null; // the cell indices of that line
  }

  /** The position after `notation` (move digits, 1-based); throws RulesError like the engine. */
  static parse(game, notation) {
    const position = new Position(game);
    const what = game.kind === "columns" ? "column" : "cell";
    const limit = game.kind === "columns" ? game.width : game.width * game.height;
    [...notation].forEach((char, i) => {
      const index = i + 1;
      if (!(char >= "0" && char <= "9")) {
        throw new RulesError(`'${notation}': '${char}' is not a ${what} digit (move ${index})`);
      }
      const number = Number(char);
      if (number < 1 || number > limit) {
        throw new RulesError(
          `'${notation}': ${what} ${number} is outside 1..${limit} (move ${index})`,
        );
      }
      if (position.over) {
        throw new RulesError(`'${notation}': the game is already over after move ${index - 1}`);
      }
      if (!position.canPlay(number - 1)) {
        const why = game.kind === "columns" ? "is full" : "is taken";
        throw new RulesError(`'${notation}': ${what} ${number} ${why} (move ${index})`);
      }
      position.play(number - 1);
    });
    return position;
  }

  get ply() {
    return this.moves.length;
  }

  get sideToMove() {
    return this.ply % 2;
  }

  get full() {
    return this.ply === this.cells.length;
  }

  get over() {
    return this.winner !== null || this.full;
  }

  /** null while the game goes on; else {winner: 0 | 1 | null (draw)}. */
  get outcome() {
    if (this.winner !== null) return { winner: this.winner };
    return this.full ? { winner: null } : null;
  }

  notation() {
    return this.moves.map((m) => String(m + 1)).join("");
  }

  /** The cell a move fills, or -1 if it cannot be played. */
  target(move) {
    const { width, height } = this.game;
    if (this.game.kind === "columns") {
      if (move < 0 || move >= width) return -1;
      for (let row = height - 1; row >= 0; row--) {
        if (this.cells[row * width + move] === null) return row * width + move;
      }
      return -1;
    }
    return move >= 0 && move < this.cells.length && this.cells[move] === null ? move : -1;
  }

  canPlay(move) {
    return !this.over && this.target(move) >= 0;
  }

  legalMoves() {
    const count = this.game.kind === "columns" ? this.game.width : this.cells.length;
    const moves = [];
    for (let m = 0; m < count; m++) if (this.canPlay(m)) moves.push(m);
    return moves;
  }

  play(move) {
    const cell = this.target(move);
    if (this.over || cell < 0) throw new RulesError(`${this.game.unit} ${move + 1} cannot be played`);
    this.cells[cell] = this.sideToMove;
    this.moves.push(move);
    this.winLine = this.lineThrough(cell);
    if (this.winLine) this.winner = this.cells[cell];
    return cell;
  }

  undo() {
    const move = this.moves.pop();
    const { width, height } = this.game;
    if (this.game.kind === "columns") {
      for (let row = 0; row < height; row++) {
        if (this.cells[row * width + move] !== null) {
          this.cells[row * width + move] = null;
          break;
        }
      }
    } else {
      this.cells[move] = null;
    }
    this.winner = null;
    this.winLine = null;
    return move;
  }

  copy() {
    const other = new Position(this.game);
    other.moves = [...this.moves];
    other.cells = [...this.cells];
    other.winner = this.winner;
    other.winLine = this.winLine && [...this.winLine];
    return other;
  }

  /** The cells of a winning line through `cell`, or null (4 in a row; 3 for tic-tac-toe). */
  lineThrough(cell) {
    const { width, height } = this.game;
    const need = this.game.kind === "columns" ? 4 : 3;
    const who = this.cells[cell];
    const row0 = Math.floor(cell / width);
    const col0 = cell % width;
    for (const [dr, dc] of [[0, 1], [1, 0], [1, 1], [1, -1]]) {
      const line = [cell];
      for (const sign of [1, -1]) {
        let r = row0 + sign * dr;
        let c = col0 + sign * dc;
        while (r >= 0 && r < height && c >= 0 && c < width && this.cells[r * width + c] === who) {
          line.push(r * width + c);
          r += sign * dr;
          c += sign * dc;
        }
      }
      if (line.length >= need) return line;
    }
    return null;
  }
}

/**
 * What a score means, from the player to move in a position of `ply` moves.
 *
 * `score` is the engine's (see the top of this file), either of the position or
 * of one move in it (the value, for the side to move, of playing that move).
 * Returns {kind: "win" | "draw" | "loss" | "eval", n, text, short}: for "win",
 * the side to move wins with its n-th move from now (counting the move about to
 * be played); for "loss", the opponent wins with its n-th move from now. "eval"
 * is a heuristic value from a depth- or time-limited search: not a game result.
 */
export function describeScore(game, ply, score, exact = true) {
  if (score === null || score === undefined) return null;
  if (!exact) {
    const sign = score > 0 ? "+" : "";
    return { kind: "eval", n: score, text: `estimate ${sign}${score}`, short: `${sign}${score}` };
  }
  if (score === 0) return { kind: "draw", n: 0, text: "draw", short: "=" };
  const base = maxStones(game) + 1;
  const mine = Math.floor(ply / 2); // stones the side to move has already placed
  const theirs = ply - mine;
  if (score > 0) {
    const n = base - score - mine;
    return { kind: "win", n, text: `win in ${n}`, short: String(n) };
  }
  const n = base + score - theirs;
  return { kind: "loss", n, text: `loss in ${n}`, short: String(n) };
}

/** "1st", "2nd", "3rd", "4th", ... */
export function ordinal(n) {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return n + ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
}
