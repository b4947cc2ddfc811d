// Drawing a game review (grading.js computes it): each player's accuracy, and the graph
// of the exact evaluation over the game, one point per position, which is also a slider
// (click a point, or use the arrow keys) to go to that position.

import { GRADES, maxScore } from "./grading.js";
import { ordinal } from "./rules.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 140;
const PAD = 8;

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** What a graph point says: "after move 5 (Red 4): Red wins with its 8th move (15 moves
 * to the end)", or that the position was not solved exactly. */
export function pointWords(game, point, move) {
  const where = point.ply === 0 ? "Start" : `After move ${point.ply} (${game.sides[(point.ply - 1) % 2]} ${move})`;
  if (!point.known) return `${where}: not solved exactly`;
  if (point.kind === "over") return `${where}: ${game.sides[point.winner]} has won`;
  if (point.winner === null) {
    return point.ply === game.width * game.height ? `${where}: a draw` : `${where}: a draw with best play (${point.toEnd} moves to the end)`;
  }
  const plural = point.toEnd === 1 ? "move" : "moves";
  return `${where}: ${game.sides[point.winner]} wins with its ${ordinal(point.n)} move (${point.toEnd} ${plural} to the end)`;
}

/** x of position `ply` among `count` positions, in the graph's units. */
const xOf = (ply, count) => PAD + (count > 1 ? (ply * (WIDTH - 2 * PAD)) / (count - 1) : 0);

/**
 * Draw the review's graph into `node` (the slider element): the exact value for the first
 * player at each position (up: the first player wins, the higher the sooner; down: the
 * second; on the line: a draw), gaps where a position has no exact value, each move's
 * point marked by its grade, and the position shown (`ply`).
 */
export function drawGraph(node, game, review, ply, moveNames) {
  const points = review.points;
  const scale = maxScore(game);
  const mid = HEIGHT / 2;
  // The outcome first, then its speed: any win sits clearly off the line (from 35% of the
  // half height for the slowest to 100% for the quickest), a draw on it.
  const yOf = (score) => {
    if (score === 0) return mid;
    const speed = Math.min(1, Math.abs(score) / scale);
    return mid - Math.sign(score) * (0.35 + 0.65 * speed) * (mid - PAD);
  };
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", "aria-hidden": "true", class: "graph-svg" });
  chart.append(svg("rect", { x: 0, y: 0, width: WIDTH, height: mid, class: "graph-top" }));
  chart.append(svg("rect", { x: 0, y: mid, width: WIDTH, height: mid, class: "graph-bottom" }));
  chart.append(svg("line", { x1: 0, x2: WIDTH, y1: mid, y2: mid, class: "graph-zero" }));
  // The line through the known points; a gap where a position is not solved exactly.
  let run = [];
  const flush = () => {
    if (run.length > 1) chart.append(svg("polyline", { points: run.join(" "), class: "graph-line" }));
    run = [];
  };
  for (const p of points) {
    if (!p.known) {
      flush();
      continue;
    }
    run.push(`${xOf(p.ply, points.length).toFixed(1)},${yOf(p.score).toFixed(1)}`);
  }
  flush();
  chart.append(svg("line", { x1: xOf(ply, points.length), x2: xOf(ply, points.length), y1: 0, y2: HEIGHT, class: "graph-now" }));
  // The dots stay round however the chart is stretched: drawn over it, in % of its box.
  const dots = document.createElement("div");
  dots.className = "graph-dots";
  dots.setAttribute("aria-hidden", "true");
  for (const p of points) {
    const dot = document.createElement("span");
    const grade = p.ply > 0 ? review.moves[p.ply - 1]?.grade : null;
    dot.className = `graph-dot ${p.known ? "" : "unknown "}${grade ? GRADES[grade].kind : ""}${p.ply === ply ? " now" : ""}`;
    dot.style.left = `${(100 * xOf(p.ply, points.length)) / WIDTH}%`;
    dot.style.top = `${(100 * (p.known ? yOf(p.score) : mid)) / HEIGHT}%`;
    dot.dataset.ply = p.ply;
    dots.append(dot);
  }
  node.replaceChildren(chart, dots);
  node.setAttribute("aria-valuemin", "0");
  node.setAttribute("aria-valuemax", String(points.length - 1));
  node.setAttribute("aria-valuenow", String(ply));
  const point = points[Math.min(ply, points.length - 1)];
  node.setAttribute("aria-valuetext", pointWords(game, point, moveNames[point.ply - 1]));
  node.title = node.getAttribute("aria-valuetext");
}

/** The position (ply) nearest a click at `clientX` on the graph `node` of `count` points. */
export function plyAt(node, clientX, count) {
  const box = node.getBoundingClientRect();
  const x = ((clientX - box.left) / box.width) * WIDTH;
  const ply = Math.round(((x - PAD) * (count - 1)) / (WIDTH - 2 * PAD));
  return Math.max(0, Math.min(count - 1, ply));
}

/** The accuracy table: one row per player, with the number of moves of each grade. */
export function drawAccuracy(table, game, review) {
  const head = document.createElement("tr");
  for (const text of ["Player", "Accuracy", "Best", "Slower win / quicker loss", "Result lost"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    head.append(th);
  }
  const rows = review.players.map((p, side) => {
    const tr = document.createElement("tr");
    const who = document.createElement("th");
    who.scope = "row";
    who.textContent = game.sides[side];
    const c = p.counts;
    const cells = [
      p.accuracy === null ? "—" : `${p.accuracy}%`,
      c.best || 0,
      (c.slower || 0) + (c.quicker || 0),
      (c.lostwin || 0) + (c.lostdraw || 0),
    ];
    tr.append(who, ...cells.map((v) => Object.assign(document.createElement("td"), { textContent: String(v) })));
    tr.dataset.side = side;
    return tr;
  });
  const thead = document.createElement("thead");
  thead.append(head);
  const tbody = document.createElement("tbody");
  tbody.append(...rows);
  table.replaceChildren(thead, tbody);
}
