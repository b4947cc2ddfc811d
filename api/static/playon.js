// Playing on from any position against plybot, in the analysis view.
//
// The service's games (POST /v1/games) always start from the empty board, so the bot's
// replies here come from the analysis API instead, at the strengths of plybot's levels
// (engine/levels.py): perfect is an exact solve; hard, medium and easy are searches of
// the levels' depths; easy then chooses at random among the moves its search sees within
// a margin of the best (a softmax).

import { analyseOnce } from "./api.js";
import { bestChoice } from "./grading.js";

/** Each level's search (see engine/levels.py): exact, or a depth per game. */
export const LEVELS = {
  easy: { depth: { connect4: 2, tictactoe: 1 }, temperature: 2, margin: 6 },
  medium: { depth: { connect4: 6, tictactoe: 3 } },
  hard: { depth: { connect4: 10, tictactoe: 5 } },
  perfect: { exact: true },
};

/**
 * Choose among scored moves like the easy level: moves within `margin` of the best
 * score, weighted by exp(score / temperature). `random` returns a number in [0, 1).
 */
export function easyChoice(moves, { temperature, margin }, random = Math.random) {
  const entries = Object.entries(moves);
  const top = Math.max(...entries.map(([, s]) => s));
  const pool = entries.filter(([, s]) => s >= top - margin);
  const weights = pool.map(([, s]) => Math.exp((s - top) / temperature));
  let pick = random() * weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < pool.length; i++) {
    pick -= weights[i];
    if (pick < 0) return pool[i][0];
  }
  return pool[pool.length - 1][0];
}

/**
 * plybot's move (its name) at `level` in the position `notation` of `game`, from the
 * analysis API. `signal` (an AbortSignal) cancels the analysis.
 */
export async function botMove(game, notation, level, { signal, random = Math.random } = {}) {
  const spec = LEVELS[level];
  if (!spec) throw new Error(`'${level}': unknown level (known: ${Object.keys(LEVELS).join(", ")})`);
  const options = spec.exact
    ? { signal, mode: "solve" }
    : { signal, mode: "depth", depth: spec.depth[game.name] ?? spec.depth.connect4 };
  const result = await analyseOnce(game.name, notation, options);
  if (spec.temperature && result.moves) return easyChoice(result.moves, spec, random);
  return bestChoice(result).move;
}
