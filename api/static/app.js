// plybot's page: play against the bot, or analyse a position, over the HTTP API.
//
// Two views behind hash routes: #/play and #/analyse/<game>/<moves>[/review] (a link to
// the latter shows the same board; ?game=connect4&position=4453 works too). Each view
// lives in its own module (player.js, analyser.js); this one routes, takes the keys and
// starts them. Every score and every bot move comes from the service; the page only draws.

import { $ } from "./alert.js";
import { Analyser } from "./analyser.js";
import { Player } from "./player.js";

/** {view, game, notation, review} of the current address. */
function readRoute() {
  const params = new URLSearchParams(location.search);
  if (!location.hash && (params.has("position") || params.has("game"))) {
    return { view: "analyse", game: params.get("game") || "connect4", notation: params.get("position") || "" };
  }
  const [view, game, notation = "", extra = ""] = location.hash.replace(/^#\/?/, "").split("/");
  if (view === "analyse") {
    return { view, game: game || "connect4", notation: decodeURIComponent(notation), review: extra === "review" };
  }
  return { view: "play", game: game || null, notation: "" };
}

function route() {
  const { view, game, notation, review } = readRoute();
  $("#play-view").hidden = view !== "play";
  $("#analyse-view").hidden = view !== "analyse";
  for (const keys of document.querySelectorAll(".foot [data-view]")) keys.hidden = keys.dataset.view !== view;
  for (const [tab, name] of [[$("#tab-play"), "play"], [$("#tab-analyse"), "analyse"]]) {
    if (name === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (view === "analyse") analyser.open(game, notation, review);
  else {
    analyser.leave(); // what the page no longer shows must not keep a worker busy
    player.open();
  }
}

function onKey(event) {
  const target = event.target;
  if (event.altKey || event.metaKey || (event.ctrlKey && !["z", "y"].includes(event.key))) return;
  if (target.closest && target.closest("input, select, textarea, dialog")) return;
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
  const onButton = target.closest && target.closest("button, a");
  if ((event.key === "ArrowLeft" && !onBoard) || event.key === "Backspace" || (event.ctrlKey && event.key === "z")) {
    event.preventDefault();
    analyser.undo();
  } else if ((event.key === "ArrowRight" && !onBoard) || (event.ctrlKey && event.key === "y")) {
    event.preventDefault();
    analyser.redoMove();
  } else if (event.key === "Home" && !onBoard) {
    event.preventDefault();
    analyser.toStart();
  } else if (event.key === "b" || (event.key === " " && !onButton)) {
    event.preventDefault();
    analyser.playBest();
  } else if (event.key === "f") {
    event.preventDefault();
    analyser.flip();
  }
}

const player = new Player();
const analyser = new Analyser();
window.addEventListener("hashchange", route);
// Closing the tab or leaving the site: cancel the running analysis (a keepalive request).
window.addEventListener("pagehide", () => analyser.leave());
document.addEventListener("keydown", onKey);
route();
// For the browser tests and the curious: the page's state, read-only by convention.
window.plybot = { player, analyser };
