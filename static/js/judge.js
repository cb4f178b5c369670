// The judging page: plays the two clips, collects BROAD + FINE and talks to /api/a/{token}/.
// Blind by design: it only ever shows what the API sends (audio URLs, durations, the
// assessor's own scores and campaign-wide counts), never systems, ranks or document ids.
//
// This entry wires the page's buttons and keys to the modules in judge/ and starts; the
// modules, by job: session.js (the states and the loop: next pair, submit, break), pair.js
// (the pair on screen and whether it can be submitted), player.js and waveform.js (a clip),
// form.js (the scores and Submit), way_in.js (the volume check and the practice pair),
// history.js (recent judgments and their revision), progress.js (the progress card),
// keyboard.js (shortcuts), network.js (the assessor API, through lib.js), audio.js (Web
// Audio), page.js (shared DOM); and, pure (no DOM, tested in tests/js): levels.js, timeline.js,
// rules.js, keys.js, failures.js, summary.js, format.js.

import { closeRevision, edit, refreshHistory, revisionOpen, saveRevision } from "./judge/history.js";
import { installShortcuts, toggleHelp } from "./judge/keyboard.js";
import { fetchProgress } from "./judge/network.js";
import { root } from "./judge/page.js";
import { currentPair, main, noteListening } from "./judge/pair.js";
import { startClock } from "./judge/player.js";
import { renderProgress } from "./judge/progress.js";
import { loadNext, setState, showDone, stopWaitTimer, submitJudgment, takeBreak } from "./judge/session.js";
import { leaveCheck, showCheck, toggleTestSound, volumeChecked } from "./judge/way_in.js";
import { $ } from "./lib.js";

// What the shortcuts act on: the revision dialog when it is open, else the pair on screen.
const mainKeys = { query: main.query, candidate: main.candidate, form: main.form, submit: submitJudgment };
const editKeys = { query: edit.query, candidate: edit.candidate, form: edit.form, submit: saveRevision };
installShortcuts(() => {
  if (revisionOpen()) return editKeys;
  if (root.dataset.state === "pair" && currentPair() !== null) return mainKeys;
  return null;
});

$("#score-form").addEventListener("submit", (event) => {
  event.preventDefault();
  submitJudgment();
});
$("#edit-form").addEventListener("submit", (event) => {
  event.preventDefault();
  saveRevision();
});
$("#edit-cancel").addEventListener("click", closeRevision);
$("#edit-close").addEventListener("click", closeRevision);
$("#help-button").addEventListener("click", (event) => toggleHelp(event.detail > 0));
$("#pause-button").addEventListener("click", takeBreak);
$("#resume-button").addEventListener("click", () => loadNext());
$("#wait-retry").addEventListener("click", () => {
  stopWaitTimer();
  loadNext();
});
$("#error-retry").addEventListener("click", () => loadNext());
$("#check-play").addEventListener("click", toggleTestSound);
$("#check-yes").addEventListener("click", () => leaveCheck(false));
$("#check-practice").addEventListener("click", () => leaveCheck(true));
// Move the playheads and the listening counts while sound plays.
startClock((player) => {
  if (player === main.query || player === main.candidate) noteListening(player);
});

async function start() {
  const link = $("#resume-link");
  link.textContent = new URL(link.textContent, window.location.href).href;
  if (root.dataset.state === "done") {
    setState("done");
    try {
      renderProgress(await fetchProgress());
    } catch {
      // the thank-you page stands on its own
    }
    showDone(root.dataset.doneMessage);
    return;
  }
  if (volumeChecked()) {
    await loadNext();
  } else {
    showCheck();
    fetchProgress()
      .then(renderProgress)
      .catch(() => {
        // the sidebar fills in with the first pair
      });
  }
  refreshHistory();
}

start();
