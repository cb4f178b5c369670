// The pair on screen: its record ({pair, clientId, practice}: the API's pair, the judgment's
// idempotency key, and whether it is the practice pair), its two players and scores form, the
// listening rule applied to it, and whether it can be submitted yet.

import { $ } from "../lib.js";
import { hideSubmitError, renderSubmit, ScoreForm } from "./form.js";
import { announce, root } from "./page.js";
import { ClipPlayer } from "./player.js";
import { ruleText, submitHint } from "./rules.js";

let current = null; // the record of the pair on screen
let submitting = false;

const practiceBanner = $("#practice-banner");
const pairNotice = $("#pair-notice");
const listenRule = $("#listen-rule");
/** The line under the players that says how they were levelled. */
export const levelsNote = $("#levels-note");

export const main = {
  query: new ClipPlayer($("#main-query-player"), { onChange: noteListening }),
  candidate: new ClipPlayer($("#main-candidate-player"), { onChange: noteListening }),
  form: new ScoreForm($("#score-form"), () => {
    hideSubmitError();
    updateSubmitState();
  }),
};

/** The record of the pair on screen, or null. */
export function currentPair() {
  return current;
}

/** Put `record` on screen with empty scores and a listening rule of `ruleSeconds` (0: none). */
export function beginPair(record, ruleSeconds) {
  current = record;
  main.form.reset();
  applyRule(ruleSeconds);
}

/** The pair was judged (or left): nothing is on screen to submit. */
export function forgetPair() {
  current = null;
}

/** Forget the pair and empty its players. */
export function clearPair() {
  current = null;
  root.dataset.leaseId = "";
  main.query.unload();
  main.candidate.unload();
}

/** The line over the pair: `label`, whether it has the previous query, the practice banner, a notice. */
export function labelPair({ label, sameQuery, practice, notice }) {
  practiceBanner.hidden = !practice;
  root.dataset.practice = String(practice);
  $("#pair-label").textContent = label;
  $("#same-query").hidden = !sameQuery;
  pairNotice.hidden = !notice;
  pairNotice.textContent = notice ?? "";
}

export function isSubmitting() {
  return submitting;
}

/** Whether a judgment is being sent (the caller updates the Submit state). */
export function setSubmitting(value) {
  submitting = value;
}

/** Apply a listening rule (seconds, 0 = none) to the pair and say it. */
function applyRule(seconds) {
  main.query.ruleSeconds = seconds;
  main.candidate.ruleSeconds = seconds;
  listenRule.hidden = seconds <= 0;
  listenRule.textContent = ruleText(seconds);
}

/** Enable Submit once both scores are given and both clips heard as the rule asks. */
export function updateSubmitState() {
  const { broad, fine, complete } = main.form;
  const players = [main.query, main.candidate];
  const unheard = current === null ? [] : players.filter((player) => !player.ruleMet());
  const broken = current !== null && players.some((player) => player.element.dataset.state === "error");
  const ready = complete && unheard.length === 0 && !broken;
  const hint = submitHint({
    submitting,
    broken,
    ready,
    practice: Boolean(current?.practice),
    unheard: unheard.map((player) => ({ label: player.label, required: player.required() })),
    broad,
    fine,
  });
  renderSubmit({ ready, submitting, hint });
}

/** A clip of the pair changed (played, paused, loaded): has it now been heard enough? */
export function noteListening(player) {
  if (current !== null && !player.metRule && player.required() > 0 && player.ruleMet()) {
    player.metRule = true;
    announce(`The ${player.label} has been heard long enough.`);
  }
  updateSubmitState();
}
