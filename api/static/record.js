// A game on paper: the plain-text record of a review (export), and reading a game back
// from what a person pastes (import): a move string, a plybot link, or such a record.
// No DOM here, so the tests can call these directly.

import { GAMES, Position } from "./rules.js";

/** The first line of every record: how an import recognises one. */
export const RECORD_TITLE = "plybot game review";

/**
 * The plain-text record of a game and its review.
 * game: GAMES entry; moves: 0-based moves; review: reviewGame(...) or null; link: the
 * address that opens the review. One line per move, with its grade when reviewed.
 */
export function gameRecord(game, moves, review, link) {
  const position = new Position(game);
  for (const m of moves) position.play(m);
  const notation = position.notation();
  const lines = [
    `${RECORD_TITLE}: ${game.title}`,
    `Game: ${game.name}`,
    `Moves: ${notation || "(none)"}`,
    `Link: ${link}`,
    `Result: ${resultWords(game, position)}`,
  ];
  if (review) {
    const accuracy = review.players.map((p, side) => {
      const figure = p.accuracy === null ? "not graded" : `${p.accuracy}%`;
      return `${game.sides[side]} ${figure} (${p.graded} of ${p.moves} moves graded)`;
    });
    lines.push(`Accuracy: ${accuracy.join("; ")}`);
  }
  lines.push("");
  moves.forEach((m, i) => {
    const graded = review?.moves[i];
    const grade = graded ? ` ${graded.grade === "best" ? "" : `${gradeGlyph(graded)} `}${graded.text}` : "";
    lines.push(`${i + 1}. ${game.sides[i % 2]} ${m + 1}${grade ? " —" : ""}${grade}`);
  });
  return `${lines.join("\n")}\n`;
}

function gradeGlyph(graded) {
  return { slower: "?!", quicker: "?!", lostwin: "??", lostdraw: "??", unknown: "" }[graded.grade] || "";
}

/** The outcome of `position` in words. */
export function resultWords(game, position) {
  const outcome = position.outcome;
  if (!outcome) return `unfinished, ${game.sides[position.sideToMove]} to move`;
  if (outcome.winner === null) return "draw";
  return `${game.sides[outcome.winner]} won`;
}

/** Why an import could not be read: the message says what was expected. */
export class ImportError extends Error {}

/**
 * The game in `text`: {game (a GAMES entry), notation}. Reads, in this order: a plybot
 * link (`…#/analyse/<game>/<moves>[/review]` or `…?game=<game>&position=<moves>`), a
 * record (gameRecord's "Game:" and "Moves:" lines), or a bare move string, which may be
 * numbered ("1. 4 4 2. 5 3") and spaced or comma-separated; a bare string is a game of
 * `fallback` (the game chosen in the page). The moves' legality is not checked here (the
 * position's parser and the API say what is wrong with them); the game's name is.
 */
export function parseImport(text, fallback) {
  const source = String(text || "").trim();
  if (!source) throw new ImportError("Nothing to import: paste a move string, a plybot link or a plybot record.");
  const named = (name) => {
    const game = GAMES[name];
    if (!game) throw new ImportError(`'${name}': unknown game (known: ${Object.keys(GAMES).join(", ")})`);
    return game;
  };
  const hash = source.match(/#\/analyse\/([A-Za-z0-9]+)\/([0-9]*)/);
  if (hash) return { game: named(hash[1]), notation: hash[2] };
  const query = source.match(/[?&]position=([0-9]*)/);
  if (query) {
    const game = source.match(/[?&]game=([A-Za-z0-9]+)/);
    return { game: game ? named(game[1]) : fallback, notation: query[1] };
  }
  const moves = source.match(/^Moves:\s*(\S*)/m);
  if (moves) {
    const game = source.match(/^Game:\s*(\S+)/m);
    const notation = moves[1] === "(none)" ? "" : moves[1];
    if (!/^[0-9]*$/.test(notation)) throw new ImportError(`The record's moves '${notation}' are not move digits.`);
    return { game: game ? named(game[1]) : fallback, notation };
  }
  // A bare move string: drop move numbers ("12." or "12…"), then separators.
  const bare = source.replace(/\b\d+\s*(\.\.\.|…|\.)/g, " ").replace(/[\s,;]+/g, "");
  if (!/^[0-9]+$/.test(bare)) {
    throw new ImportError(
      "Not a move string, a plybot link or a plybot record: paste moves as digits (e.g. 4453), a link to a position, or an exported record.",
    );
  }
  return { game: fallback, notation: bare };
}
