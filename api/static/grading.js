// What the service has proven about a position, and the grades of a game's moves.
//
// No DOM here: pure functions of the analysis API's results (a result is the `result`
// of GET /v1/analyses/{id}: score, exact, moves, lower, upper, bounds, pv, best_move),
// so the page's views only draw what these say, and the tests can call them directly.
//
// Honesty rules: a figure that is only an estimate is never reported as exact (every
// function below says `exact`/`proven` only for what the solver proved), and a move
// proven worse than another is never called best.

import { describeScore, maxStones } from "./rules.js";

/** Sign of a score: 1 a win for the side to move, 0 a draw, -1 a loss. */
const sign = (score) => (score > 0 ? 1 : score < 0 ? -1 : 0);

/**
 * What is proven of each move of `result`: {name: {lo, hi, score, exact}}, where [lo, hi]
 * holds the move's exact score (lo === hi === score when it is solved) and `score` is the
 * figure the search gave (an estimate inside [lo, hi] when not exact). Without proven
 * bounds an inexact figure proves nothing: [-Infinity, Infinity]. {} without `moves`.
 */
export function moveFacts(result) {
  const facts = {};
  if (!result || !result.moves) return facts;
  const bounds = result.bounds || {};
  for (const [name, score] of Object.entries(result.moves)) {
    if (result.exact) {
      facts[name] = { lo: score, hi: score, score, exact: true };
      continue;
    }
    const [lo, hi] = bounds[name] || [-Infinity, Infinity];
    facts[name] = lo === hi ? { lo, hi, score: lo, exact: true } : { lo, hi, score, exact: false };
  }
  return facts;
}

/**
 * The proven interval [lo, hi] of the position's own score: a point when exact; the
 * result's `lower`/`upper` when the solver ran out of time; the best move's bounds
 * otherwise (the position is worth its best move); unbounded when nothing is proven.
 */
export function scoreBounds(result) {
  if (!result) return [-Infinity, Infinity];
  if (result.exact) return [result.score, result.score];
  let lo = Number.isFinite(result.lower) ? result.lower : -Infinity;
  let hi = Number.isFinite(result.upper) ? result.upper : Infinity;
  const facts = Object.values(moveFacts(result));
  if (facts.length && facts.every((f) => Number.isFinite(f.hi))) {
    // The position is worth its best move: at least the best lower bound of a move, at
    // most the best upper bound of any.
    lo = Math.max(lo, ...facts.map((f) => f.lo));
    hi = Math.min(hi, Math.max(...facts.map((f) => f.hi)));
  }
  return [lo, hi];
}

/**
 * The move to call best, and whether it is proven best: {move (its name) | null, proven}.
 * Exact results: the service's best move (a top score). Otherwise the search's choice,
 * unless another move's proven lower bound reaches the choice's upper bound and beats its
 * lower bound (the choice is then at best equal and possibly worse: the move with the
 * highest proven floor is named instead). `proven`: no other move can score higher.
 */
export function bestChoice(result) {
  if (!result) return { move: null, proven: false };
  const facts = moveFacts(result);
  const names = Object.keys(facts);
  let move = result.best_move ?? result.pv?.[0] ?? null;
  if (!names.length) return { move, proven: Boolean(result.exact && move !== null) };
  if (move === null || !(move in facts)) move = names[0];
  const pick = facts[move];
  const floor = Math.max(...names.map((n) => facts[n].lo));
  if (floor > pick.lo && floor >= pick.hi) {
    // Highest floor first, then the better estimate.
    move = names
      .filter((n) => facts[n].lo === floor)
      .sort((a, b) => facts[b].score - facts[a].score)[0];
  }
  const others = names.filter((n) => n !== move);
  const proven = others.every((n) => facts[move].lo >= facts[n].hi);
  return { move, proven };
}

/**
 * The position's verdict, from the side to move at `ply` (see rules.describeScore):
 * {kind, proven, fast, slow} with kind "win" | "loss" | "draw" when proven (fast..slow:
 * the range of N in "wins with its N-th move"; equal when exact), "draw+" (at least a
 * draw, a win not ruled out), "draw-" (at best a draw), or "eval" (nothing proven:
 * `score` is the search's estimate).
 */
export function verdictOf(game, ply, result) {
  let [lo, hi] = scoreBounds(result);
  // Unbounded sides clamp to the scores a position of `ply` can have (a win or loss
  // at the next move at the most), so the move counts stay finite.
  const base = maxStones(game) + 1;
  lo = Math.max(lo, Math.ceil(ply / 2) + 1 - base);
  hi = Math.min(hi, base - Math.floor(ply / 2) - 1);
  if (lo > 0 || hi < 0 || (lo === 0 && hi === 0)) {
    const a = describeScore(game, ply, lo, true);
    const b = describeScore(game, ply, hi, true);
    const kind = a.kind;
    // A higher score is a quicker win and a slower loss.
    const [fast, slow] = kind === "win" ? [b.n, a.n] : [a.n, b.n];
    return { kind, proven: true, fast, slow, exact: lo === hi };
  }
  if (lo === 0) return { kind: "draw+", proven: true, exact: false };
  if (hi === 0) return { kind: "draw-", proven: true, exact: false };
  return { kind: "eval", proven: false, exact: false, score: result?.score };
}

// -- a game's review ---------------------------------------------------------------------

/**
 * The grades, best first (worse grades cost more accuracy; see gradeMove):
 * best: a move with the position's exact score; slower: still wins, later than it could;
 * quicker: still loses, sooner than it had to; lostdraw: a draw became a loss; lostwin:
 * a win became a draw or a loss; unknown: the position was not solved exactly.
 */
export const GRADES = {
  best: { glyph: "", word: "best move", kind: "best" },
  slower: { glyph: "?!", word: "a slower win", kind: "inaccuracy" },
  quicker: { glyph: "?!", word: "a quicker loss", kind: "inaccuracy" },
  lostdraw: { glyph: "??", word: "let a draw become a loss", kind: "blunder" },
  lostwin: { glyph: "??", word: "lost the win", kind: "blunder" },
  unknown: { glyph: "", word: "not graded (no exact value)", kind: "unknown" },
};

/** Points of an outcome (win 1, draw ½, loss 0), the scale of the accuracy. */
const POINTS = { 1: 1, 0: 0.5, "-1": 0 };

/**
 * Grade move `name` played at `ply` from a position whose analysis is `result` (every
 * move scored). Only an exact result grades: else {grade: "unknown"}.
 *
 * Returns {grade, best, played, bestMoves, accuracy, text}: the position's and the
 * move's exact scores (side to move at `ply`), the names of the moves with the best
 * score, and the move's accuracy in percent: 100 for a best move; a lost outcome costs
 * the points it lost (a win turned into a draw, or a draw into a loss: 50; a win into a
 * loss: 0); within the same outcome a slower win (or quicker loss) costs up to 25, in
 * proportion to the moves it gives away (win in 5 instead of 4: 100 - 25 * (1 - 4/5) = 95).
 */
export function gradeMove(game, ply, result, name) {
  const facts = moveFacts(result);
  const mine = facts[name];
  if (!result || !result.exact || !mine || !mine.exact) {
    return { grade: "unknown", accuracy: null, text: GRADES.unknown.word };
  }
  const best = result.score;
  const played = mine.score;
  const bestMoves = Object.keys(facts).filter((n) => facts[n].score === best);
  const words = (score) => describeScore(game, ply, score, true).text;
  const unit = game.kind === "columns" ? "column" : "cell";
  const instead = `best: ${unit} ${bestMoves.join(" or ")}, ${words(best)}`;
  if (played >= best) {
    return { grade: "best", best, played, bestMoves, accuracy: 100, text: `best move (${words(played)})` };
  }
  if (sign(played) < sign(best)) {
    const grade = sign(best) > 0 ? "lostwin" : "lostdraw";
    const accuracy = Math.round(100 * (1 - (POINTS[sign(best)] - POINTS[sign(played)])));
    const now = sign(played) < 0 ? "a loss" : "a draw";
    const text = grade === "lostwin" ? `lost the win: ${now} now (${words(played)}; ${instead})` : `let a draw become a loss (${words(played)}; ${instead})`;
    return { grade, best, played, bestMoves, accuracy, text };
  }
  // Same outcome, not the quickest win (or the longest defence).
  const n = (score) => describeScore(game, ply, score, true).n;
  const grade = best > 0 ? "slower" : "quicker";
  const ratio = best > 0 ? n(best) / n(played) : n(played) / n(best);
  const accuracy = Math.round(100 - 25 * (1 - ratio));
  const text = `${GRADES[grade].word}: ${words(played)} (${instead})`;
  return { grade, best, played, bestMoves, accuracy, text };
}

/**
 * The review of the game `moves` (0-based), given `resultAt(ply)`: the analysis of the
 * position before move ply+1, or undefined while unknown.
 *
 * Returns {moves: [{ply (1-based), side, name, ...gradeMove}], players: [{accuracy,
 * graded, counts}, ...] (index = side: 0 moves first), points: evalSeries(...)}.
 * A player's accuracy is the mean of their graded moves' accuracies (null with none).
 */
export function reviewGame(game, moves, resultAt, outcome = null) {
  const graded = moves.map((move, i) => {
    const name = String(move + 1);
    return { ply: i + 1, side: i % 2, name, ...gradeMove(game, i, resultAt(i), name) };
  });
  const players = [0, 1].map((side) => {
    const own = graded.filter((g) => g.side === side);
    const scored = own.filter((g) => g.accuracy !== null);
    const counts = {};
    for (const g of own) counts[g.grade] = (counts[g.grade] || 0) + 1;
    const accuracy = scored.length
      ? Math.round(scored.reduce((sum, g) => sum + g.accuracy, 0) / scored.length)
      : null;
    return { accuracy, graded: scored.length, moves: own.length, counts };
  });
  return { moves: graded, players, points: evalSeries(game, moves.length, resultAt, outcome) };
}

/**
 * The exact evaluation over a game of `plies` moves: one point per position (ply 0 to
 * `plies`), from the first player's side: {ply, known, score, kind, winner, n, toEnd},
 * where `score` is the engine's score for the first player (positive: the first player
 * wins; larger: sooner), `winner` 0 | 1 | null (a draw), `n` the winner's N-th move from
 * that position, `toEnd` the moves (plies) to the end with best play. known: false when
 * that position has no exact value (nothing is plotted for it). `outcome` ({winner}) is
 * the finished game's result, the value of its last position.
 */
export function evalSeries(game, plies, resultAt, outcome = null) {
  const points = [];
  const cells = game.width * game.height;
  const base = maxStones(game) + 1;
  for (let ply = 0; ply <= plies; ply++) {
    if (ply === plies && outcome) {
      const w = outcome.winner;
      const winnerStones = w === null ? 0 : w === 0 ? Math.ceil(ply / 2) : Math.floor(ply / 2);
      const score = w === null ? 0 : (w === 0 ? 1 : -1) * (base - winnerStones);
      points.push({ ply, known: true, score, kind: w === null ? "draw" : "over", winner: w, n: 0, toEnd: 0 });
      continue;
    }
    const result = resultAt(ply);
    if (!result || !result.exact) {
      points.push({ ply, known: false });
      continue;
    }
    const mover = ply % 2;
    const meaning = describeScore(game, ply, result.score, true);
    const score = mover === 0 ? result.score : -result.score;
    if (meaning.kind === "draw") {
      points.push({ ply, known: true, score: 0, kind: "draw", winner: null, n: 0, toEnd: cells - ply });
    } else {
      const winner = meaning.kind === "win" ? mover : 1 - mover;
      const toEnd = meaning.kind === "win" ? 2 * meaning.n - 1 : 2 * meaning.n;
      points.push({ ply, known: true, score, kind: "win", winner, n: meaning.n, toEnd });
    }
  }
  return points;
}

/** The largest |score| of a decided game (the graph's scale): a win with the fewest stones. */
export function maxScore(game) {
  const need = game.kind === "columns" ? 4 : 3;
  return maxStones(game) + 1 - need;
}
