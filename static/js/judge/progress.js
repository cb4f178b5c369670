// The "Progress" card of the side panel: the pairs the assessor judged, the campaign's share
// of judged pairs, and how many pairs of systems are settled.

import { $ } from "../lib.js";
import { formatCount } from "./format.js";
import { progressFigures } from "./summary.js";

let last = null;

/** The last progress the API sent (null before any). */
export function lastProgress() {
  return last;
}

/** Show the API's progress (nothing changes without one). */
export function renderProgress(progress) {
  if (!progress) return;
  last = progress;
  const figures = progressFigures(progress);
  const judged = $("#assessor-judged");
  judged.textContent = formatCount(figures.mine);
  judged.dataset.value = String(figures.mine);
  $("#assessor-judged-label").textContent = figures.mine === 1 ? "pair judged by you" : "pairs judged by you";
  $("#pair-number").textContent = formatCount(figures.mine + 1);

  const campaign = `${formatCount(figures.judged)} of ${formatCount(figures.pairs)}`;
  $("#campaign-progress-text").textContent = `${campaign} pairs`;
  $("#campaign-progress-fill").style.width = `${figures.share}%`;
  const campaignBar = $("#campaign-progress");
  campaignBar.setAttribute("aria-valuenow", figures.share.toFixed(0));
  campaignBar.setAttribute("aria-valuetext", `${campaign} pairs judged`);

  // Volunteers see how many pairs of systems their work has put in order; the raw ranking
  // confidence (which can dip as evidence arrives) is for the organizers.
  const settled = `${formatCount(figures.settled)} of ${formatCount(figures.systemPairs)}`;
  const settledBar = $("#settled-progress");
  $("#settled-text").textContent = figures.systemPairs > 0 ? settled : "–";
  $("#settled-fill").style.width = `${figures.settledShare}%`;
  settledBar.setAttribute("aria-valuenow", figures.settledShare.toFixed(0));
  settledBar.setAttribute("aria-valuetext", `${settled} system pairs settled`);
  $("#settled-note").textContent = figures.canStop
    ? "The ranking of the systems is known with the confidence the organizers asked for."
    : "Judging stops when the order of the systems is known with enough confidence.";
  settledBar.classList.toggle("is-reached", figures.canStop);
}
