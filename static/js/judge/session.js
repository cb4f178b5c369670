// The judging loop: the page's states (loading, check, pair, wait, paused, done, error, one
// panel each), asking for the next pair, sending a judgment, and taking a break.

import { $, $$, ApiError, NetworkError } from "../lib.js";
import { conflictNotice, isConflict, uuidV4 } from "./failures.js";
import { nudgeSubmitHint, showSubmitError, submitDisabled } from "./form.js";
import { refreshHistory, rememberJudgment } from "./history.js";
import { fetchNext, pause, postJudgment } from "./network.js";
import { announce, CAMPAIGN_LISTEN_SECONDS, focusHeading, root } from "./page.js";
import {
  beginPair,
  clearPair,
  currentPair,
  forgetPair,
  isSubmitting,
  labelPair,
  levelsNote,
  main,
  setSubmitting,
  updateSubmitState,
} from "./pair.js";
import { levelPair } from "./player.js";
import { lastProgress, renderProgress } from "./progress.js";
import { doneWords } from "./summary.js";

/** How long the "wait" panel counts down before it asks again. */
const WAIT_SECONDS = 30;

const panels = new Map($$("[data-panel]", root).map((panel) => [panel.dataset.panel, panel]));
const pauseButton = $("#pause-button");
const stateListeners = [];
let waitTimer = null;

/** Call `listener(name)` whenever the page changes state (before the pair is cleared away). */
export function onStateChange(listener) {
  stateListeners.push(listener);
}

/** Show the panel of state `name`; any state but "pair" clears the pair away. */
export function setState(name) {
  root.dataset.state = name;
  for (const [key, panel] of panels) panel.hidden = key !== name;
  pauseButton.disabled = !(name === "pair" || name === "wait");
  if (name !== "wait") stopWaitTimer();
  for (const listener of stateListeners) listener(name);
  if (name !== "pair") clearPair();
}

// crypto.randomUUID exists only in secure contexts (HTTPS or localhost); a plain-HTTP
// deployment still needs an idempotency key, so build a v4 UUID by hand there.
function newClientId() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return uuidV4(crypto.getRandomValues(new Uint8Array(16)));
}

/** Ask for the next pair and show it, or why there is none. */
export async function loadNext({ notice = null } = {}) {
  root.setAttribute("aria-busy", "true");
  let data;
  try {
    data = await fetchNext();
  } catch (error) {
    showError(error);
    return;
  } finally {
    root.removeAttribute("aria-busy");
  }
  renderProgress(data.progress);
  if (data.status === "pair" && data.pair) showPair(data.pair, notice);
  else if (data.status === "done") showDone(data.message);
  else showWait();
}

function showPair(pair, notice) {
  const previous = currentPair();
  const samePair = previous !== null && previous.pair.lease_id === pair.lease_id;
  setState("pair");
  if (!samePair || currentPair() === null) {
    const now = { pair, clientId: newClientId(), practice: false };
    beginPair(now, Number(pair.listen_seconds ?? CAMPAIGN_LISTEN_SECONDS) || 0);
    levelsNote.textContent = "Measuring the loudness of the clips…";
    const loads = [main.query.load(pair.query), main.candidate.load(pair.candidate)];
    Promise.all(loads).then(() => {
      if (currentPair() === now) levelPair(main, levelsNote);
      updateSubmitState();
    });
  }
  root.dataset.leaseId = String(pair.lease_id);
  labelPair({
    label: `query ${pair.query_number}, candidate ${pair.candidate_number}`,
    sameQuery: pair.same_query_as_previous,
    practice: false,
    notice,
  });
  updateSubmitState();
  focusHeading("#pair-heading");
  announce(
    (notice ? `${notice} ` : "") + (pair.same_query_as_previous ? "Same query, new candidate." : "New pair loaded."),
  );
}

/** "Done": the campaign has enough judgments, is closed or not open, or every pair is judged. */
export function showDone(message = "") {
  setState("done");
  const words = doneWords(message, lastProgress());
  $("#done-heading").textContent = words.heading;
  $("#done-message").textContent = words.message;
  $("#done-icon").hidden = !words.icon;
  $("#done-count").textContent = words.count;
  focusHeading("#done-heading");
}

/** "Wait": every remaining pair is with someone else; ask again after a countdown. */
function showWait() {
  setState("wait");
  let remaining = WAIT_SECONDS;
  $("#wait-countdown").textContent = String(remaining);
  stopWaitTimer();
  waitTimer = setInterval(() => {
    remaining -= 1;
    $("#wait-countdown").textContent = String(Math.max(0, remaining));
    if (remaining <= 0) {
      stopWaitTimer();
      loadNext();
    }
  }, 1000);
  focusHeading("#wait-heading");
}

export function stopWaitTimer() {
  if (waitTimer !== null) clearInterval(waitTimer);
  waitTimer = null;
}

function showError(error) {
  setState("error");
  $("#error-heading").textContent =
    error instanceof NetworkError ? "We could not reach the server" : "Something went wrong";
  $("#error-detail").textContent =
    error instanceof NetworkError
      ? "Check your connection, then try again. Your saved judgments are safe."
      : error.message;
  focusHeading("#error-heading");
}

/** Submit the pair on screen (Enter, or the Submit button); the practice pair sends nothing. */
export async function submitJudgment() {
  const record = currentPair();
  if (isSubmitting() || record === null) return;
  updateSubmitState(); // a clip may have reached the rule since the last tick
  if (submitDisabled()) {
    nudgeSubmitHint();
    return;
  }
  if (record.practice) {
    await record.finish();
    return;
  }
  setSubmitting(true);
  updateSubmitState();
  main.query.pause();
  main.candidate.pause();
  const outcome = await send({
    lease_id: record.pair.lease_id,
    broad: main.form.broad,
    fine: main.form.fine,
    client_id: record.clientId,
    query_listen_ms: main.query.listened(),
    candidate_listen_ms: main.candidate.listened(),
  });
  if (outcome === null) return; // not sent: the pair stays, with the error under Submit
  setSubmitting(false);
  forgetPair();
  await loadNext({ notice: outcome.notice });
}

/**
 * Send a judgment: {notice: null} once saved, {notice} when the pair was no longer the
 * assessor's (the next pair says why), null when it could not be sent.
 */
async function send(body) {
  try {
    const result = await postJudgment(body);
    renderProgress(result?.progress);
    rememberJudgment(result?.judgment);
    announce("Judgment saved.");
    return { notice: null };
  } catch (error) {
    if (error instanceof ApiError && isConflict(error.status)) {
      const notice = conflictNotice(error);
      // another tab may have judged it: show the list the notice refers to
      await refreshHistory();
      return { notice };
    }
    setSubmitting(false);
    updateSubmitState();
    showSubmitError(
      error instanceof NetworkError
        ? "Could not reach the server. Your scores are still here: press Enter to try again."
        : error.message,
    );
    return null;
  }
}

/** "Take a break": give the pair back and show the paused panel. */
export async function takeBreak() {
  main.query.pause();
  main.candidate.pause();
  stopWaitTimer();
  try {
    await pause();
  } catch (error) {
    // The lease expires on its own; the assessor should still be able to walk away.
    console.warn("pause failed", error);
  }
  setState("paused");
  focusHeading("#paused-heading");
}
