// The judging page: plays the two clips, collects BROAD + FINE and talks to /api/a/{token}/.
// Blind by design: it only ever shows what the API sends (audio URLs, durations, the
// assessor's own scores and campaign-wide counts), never systems, ranks or document ids.

import { $, $$, ApiError, el, NetworkError, api as send } from "./lib.js";

const root = $("#judge");
const API = root.dataset.api;

const WAIT_SECONDS = 30;
const RETRY_DELAY_MS = 800;
// The BROAD categories' names, as the page's form shows them (templates/partials/judge_macros.html).
const BROAD_LABELS = Object.fromEntries(
  $$("#score-form .broad__option").map((option) => [
    Number($("input", option).value),
    $(".broad__text", option).textContent.trim(),
  ]),
);

// ---------------------------------------------------------------- small helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const numberFormat = new Intl.NumberFormat();

function formatTime(seconds) {
  const whole = Number.isFinite(seconds) && seconds > 0 ? Math.floor(seconds) : 0;
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

function formatAgo(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, (Date.now() - then) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}

// crypto.randomUUID exists only in secure contexts (HTTPS or localhost); a plain-HTTP
// deployment still needs an idempotency key, so build a v4 UUID by hand there.
function newClientId() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const announcer = $("#announcer");
function announce(message) {
  // Clearing first makes screen readers repeat an identical message.
  announcer.textContent = "";
  setTimeout(() => {
    announcer.textContent = message;
  }, 50);
}

// Mouse clicks should not leave focus on a control: otherwise ←/→ would move the radio
// group or a seek bar and Enter would press the last clicked button instead of submitting.
let lastPointerDown = 0;
document.addEventListener(
  "pointerdown",
  () => {
    lastPointerDown = performance.now();
  },
  true,
);
function releaseFocusAfterPointer(element) {
  if (performance.now() - lastPointerDown < 1500) element.blur();
}

// ---------------------------------------------------------------- API

/** The assessor API (no CSRF token: the assessor's token in the path is the credential). */
function api(method, path, body) {
  return send(`${API}/${path}`, { method, json: body, cache: "no-store" });
}

// ---------------------------------------------------------------- audio players

const allPlayers = new Set();

class ClipPlayer {
  constructor(element) {
    this.element = element;
    this.label = $(".player__label", element).textContent.trim().toLowerCase();
    this.audio = $("audio", element);
    this.toggleButton = $('[data-action="toggle"]', element);
    this.restartButton = $('[data-action="restart"]', element);
    this.seek = $('[data-role="seek"]', element);
    this.elapsedText = $('[data-role="elapsed"]', element);
    this.durationText = $('[data-role="duration"]', element);
    this.listenedText = $('[data-role="listened"]', element);
    this.statusText = $('[data-role="status"]', element);
    this.listenedMs = 0;
    this.playingSince = null;
    this.fallbackDuration = 0;
    this.scrubbing = false;
    allPlayers.add(this);

    const audio = this.audio;
    audio.addEventListener("play", () => {
      for (const other of allPlayers) if (other !== this) other.pause();
      this.render();
    });
    audio.addEventListener("playing", () => this.startClock());
    for (const type of ["pause", "ended", "waiting", "emptied", "error"]) {
      audio.addEventListener(type, () => this.stopClock());
    }
    for (const type of ["timeupdate", "durationchange", "loadedmetadata", "seeked"]) {
      audio.addEventListener(type, () => this.render());
    }
    audio.addEventListener("canplay", () => this.setStatus(""));
    audio.addEventListener("error", () => {
      if (audio.getAttribute("src")) this.setStatus("This clip could not be loaded.");
    });

    this.toggleButton.addEventListener("click", () => {
      this.toggle();
      releaseFocusAfterPointer(this.toggleButton);
    });
    this.restartButton.addEventListener("click", () => {
      this.restart();
      releaseFocusAfterPointer(this.restartButton);
    });
    this.seek.addEventListener("input", () => {
      this.scrubbing = true;
      const duration = this.duration;
      if (duration > 0) audio.currentTime = (Number(this.seek.value) / 1000) * duration;
      this.render();
    });
    this.seek.addEventListener("change", () => {
      this.scrubbing = false;
      releaseFocusAfterPointer(this.seek);
    });
  }

  get duration() {
    const d = this.audio.duration;
    return Number.isFinite(d) && d > 0 ? d : this.fallbackDuration;
  }

  get loaded() {
    return Boolean(this.audio.getAttribute("src"));
  }

  load(clip) {
    this.pause();
    this.stopClock();
    this.listenedMs = 0;
    this.fallbackDuration = Number(clip?.duration_seconds) || 0;
    this.setStatus("");
    if (!clip?.audio_url) {
      this.unload();
      this.setStatus("No audio for this clip: please tell the organizer.");
      return;
    }
    const url = new URL(clip.audio_url, window.location.href).href;
    if (this.audio.src === url) {
      this.audio.currentTime = 0;
    } else {
      this.audio.src = url;
      this.audio.load();
    }
    this.render();
  }

  unload() {
    this.pause();
    this.stopClock();
    this.listenedMs = 0;
    this.audio.removeAttribute("src");
    this.audio.load();
    this.render();
  }

  toggle() {
    if (this.audio.paused) this.play();
    else this.pause();
  }

  play() {
    if (!this.loaded) return;
    if (this.audio.ended) this.audio.currentTime = 0;
    const playing = this.audio.play();
    playing?.catch((error) => {
      if (error.name === "NotAllowedError") this.setStatus("Press play to start the clip.");
      else if (error.name !== "AbortError") this.setStatus("This clip could not be played.");
    });
  }

  pause() {
    if (!this.audio.paused) this.audio.pause();
  }

  restart() {
    if (!this.loaded) return;
    this.audio.currentTime = 0;
    this.play();
  }

  startClock() {
    if (this.playingSince === null) this.playingSince = performance.now();
    this.render();
  }

  stopClock() {
    if (this.playingSince !== null) {
      this.listenedMs += performance.now() - this.playingSince;
      this.playingSince = null;
    }
    this.render();
  }

  /** Milliseconds this clip has been playing since it was loaded. */
  listened() {
    const running = this.playingSince === null ? 0 : performance.now() - this.playingSince;
    return Math.round(this.listenedMs + running);
  }

  setStatus(message) {
    this.statusText.textContent = message;
  }

  render() {
    const duration = this.duration;
    const current = this.audio.currentTime || 0;
    const playing = !this.audio.paused && !this.audio.ended;
    this.element.classList.toggle("is-playing", playing);
    this.toggleButton.setAttribute("aria-label", `${playing ? "Pause" : "Play"} the ${this.label}`);
    this.toggleButton.setAttribute("aria-pressed", String(playing));
    this.elapsedText.textContent = formatTime(current);
    this.durationText.textContent = formatTime(duration);
    const fraction = duration > 0 ? Math.min(1, current / duration) : 0;
    if (!this.scrubbing) this.seek.value = String(Math.round(fraction * 1000));
    this.seek.style.setProperty("--fill", `${fraction * 100}%`);
    this.seek.setAttribute("aria-valuetext", `${formatTime(current)} of ${formatTime(duration)}`);
    this.listenedText.textContent = formatTime(this.listened() / 1000);
  }
}

// ---------------------------------------------------------------- BROAD + FINE

class ScoreForm {
  constructor(form, onChange) {
    this.form = form;
    this.onChange = onChange;
    this.radios = $$('input[type="radio"]', form);
    this.slider = $('[data-role="fine"]', form);
    this.valueText = $('[data-role="fine-value"]', form);
    this.warning = $('[data-role="disagreement"]', form);
    this.fineSet = false;

    for (const radio of this.radios) {
      radio.addEventListener("change", () => {
        this.render();
        releaseFocusAfterPointer(radio);
      });
    }
    this.slider.addEventListener("input", () => this.setFine(Number(this.slider.value)));
    // A click on the thumb's current spot changes nothing, so "input" never fires: count it.
    this.slider.addEventListener("pointerup", () => this.setFine(Number(this.slider.value)));
  }

  get broad() {
    const checked = this.radios.find((radio) => radio.checked);
    return checked ? Number(checked.value) : null;
  }

  set broad(value) {
    for (const radio of this.radios) radio.checked = Number(radio.value) === value;
    this.render();
  }

  get fine() {
    return this.fineSet ? Number(this.slider.value) : null;
  }

  setFine(value) {
    const clamped = Math.max(0, Math.min(100, Math.round(value)));
    this.slider.value = String(clamped);
    this.fineSet = true;
    this.render();
  }

  nudgeFine(delta) {
    if (!this.fineSet) this.setFine(50);
    else this.setFine(this.fine + delta);
  }

  get complete() {
    return this.broad !== null && this.fine !== null;
  }

  reset() {
    for (const radio of this.radios) radio.checked = false;
    this.fineSet = false;
    this.slider.value = "50";
    this.render();
  }

  fill(broad, fine) {
    this.reset();
    if (broad !== null && broad !== undefined) this.broad = Number(broad);
    if (fine !== null && fine !== undefined) this.setFine(Number(fine));
  }

  disagreement() {
    const { broad, fine } = this;
    if (broad === null || fine === null) return null;
    const off = (broad === 2 && fine < 40) || (broad === 0 && fine > 60) || (broad === 1 && (fine < 15 || fine > 85));
    if (!off) return null;
    return (
      `“${BROAD_LABELS[broad]}” with a FINE score of ${fine}: do the two agree? ` +
      "You can submit anyway if that is what you mean."
    );
  }

  render() {
    const fine = this.fine;
    this.valueText.textContent = fine === null ? "–" : String(fine);
    this.slider.classList.toggle("is-unset", fine === null);
    this.slider.setAttribute("aria-valuetext", fine === null ? "not set" : String(fine));
    this.slider.style.setProperty("--fill", `${fine ?? 0}%`);
    const warning = this.disagreement();
    this.warning.hidden = warning === null;
    this.warning.textContent = warning ?? "";
    this.onChange?.();
  }
}

// ---------------------------------------------------------------- page elements

const panels = new Map($$("[data-panel]", root).map((panel) => [panel.dataset.panel, panel]));
const pauseButton = $("#pause-button");
const helpDialog = $("#help-dialog");
const editDialog = $("#edit-dialog");
const submitButton = $("#submit-button");
const submitHint = $("#submit-hint");
const submitError = $("#submit-error");
const pairNotice = $("#pair-notice");

const main = {
  query: new ClipPlayer($("#main-query-player")),
  candidate: new ClipPlayer($("#main-candidate-player")),
  form: null,
  submit: () => submitJudgment(),
};
main.form = new ScoreForm($("#score-form"), updateSubmitState);

const edit = {
  query: new ClipPlayer($("#edit-query-player")),
  candidate: new ClipPlayer($("#edit-candidate-player")),
  form: null,
  submit: () => saveRevision(),
  judgment: null,
};
edit.form = new ScoreForm($("#edit-form"), () => {
  $("#edit-error").hidden = true;
});

let current = null; // { pair, clientId }
let submitting = false;
let lastProgress = null;
let waitTimer = null;

function setState(name) {
  root.dataset.state = name;
  for (const [key, panel] of panels) panel.hidden = key !== name;
  pauseButton.disabled = !(name === "pair" || name === "wait");
  if (name !== "wait") stopWaitTimer();
  if (name !== "pair") {
    current = null;
    root.dataset.leaseId = "";
    main.query.unload();
    main.candidate.unload();
  }
}

function focusHeading(selector) {
  const heading = $(selector);
  heading?.focus({ preventScroll: true });
}

/** Focus the heading of the visible state, where every shortcut (and Enter) works. */
function restFocus() {
  $(`[data-panel="${root.dataset.state}"] h1`)?.focus({ preventScroll: true });
}

function updateSubmitState() {
  const { broad, fine, complete } = main.form;
  submitButton.disabled = !complete || submitting;
  if (submitting) submitHint.textContent = "Saving…";
  else if (complete) submitHint.textContent = "Ready: press Enter to submit.";
  else if (broad === null && fine === null) submitHint.textContent = "Choose BROAD and set FINE to submit.";
  else if (broad === null) submitHint.textContent = "Choose a BROAD category (1, 2 or 3) to submit.";
  else submitHint.textContent = "Set the FINE score (click the bar or press ← →) to submit.";
  submitError.hidden = true;
}

// ---------------------------------------------------------------- progress

function renderProgress(progress) {
  if (!progress) return;
  lastProgress = progress;
  const mine = Number(progress.assessor_judged) || 0;
  const judged = $("#assessor-judged");
  judged.textContent = numberFormat.format(mine);
  judged.dataset.value = String(mine);
  $("#assessor-judged-label").textContent = mine === 1 ? "pair judged by you" : "pairs judged by you";
  $("#pair-number").textContent = numberFormat.format(mine + 1);

  const pairs = Number(progress.campaign_pairs) || 0;
  const done = Number(progress.campaign_judged) || 0;
  const share = pairs > 0 ? Math.min(100, (100 * done) / pairs) : 0;
  $("#campaign-progress-text").textContent = `${numberFormat.format(done)} of ${numberFormat.format(pairs)} pairs`;
  $("#campaign-progress-fill").style.width = `${share}%`;
  const campaignBar = $("#campaign-progress");
  campaignBar.setAttribute("aria-valuenow", share.toFixed(0));
  campaignBar.setAttribute(
    "aria-valuetext",
    `${numberFormat.format(done)} of ${numberFormat.format(pairs)} pairs judged`,
  );

  // Volunteers see how many pairs of systems their work has put in order; the raw ranking
  // confidence (which can dip as evidence arrives) is for the organizers.
  const systemPairs = Number(progress.system_pairs) || 0;
  const settled = Number(progress.system_pairs_settled) || 0;
  const settledBar = $("#settled-progress");
  const settledShare = systemPairs > 0 ? Math.min(100, (100 * settled) / systemPairs) : 0;
  $("#settled-text").textContent =
    systemPairs > 0 ? `${numberFormat.format(settled)} of ${numberFormat.format(systemPairs)}` : "–";
  $("#settled-fill").style.width = `${settledShare}%`;
  settledBar.setAttribute("aria-valuenow", settledShare.toFixed(0));
  settledBar.setAttribute(
    "aria-valuetext",
    `${numberFormat.format(settled)} of ${numberFormat.format(systemPairs)} system pairs settled`,
  );
  $("#settled-note").textContent = progress.can_stop
    ? "The ranking of the systems is known with the confidence the organizers asked for."
    : "Judging stops when the order of the systems is known with enough confidence.";
  settledBar.classList.toggle("is-reached", Boolean(progress.can_stop));
}

// ---------------------------------------------------------------- the loop

async function loadNext({ notice = null } = {}) {
  root.setAttribute("aria-busy", "true");
  let data;
  try {
    data = await api("GET", "next");
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
  const samePair = current !== null && current.pair.lease_id === pair.lease_id;
  setState("pair");
  if (!samePair || current === null) {
    current = { pair, clientId: newClientId() };
    main.form.reset();
    main.query.load(pair.query);
    main.candidate.load(pair.candidate);
  }
  root.dataset.leaseId = String(pair.lease_id);
  $("#pair-label").textContent = `query ${pair.query_number}, candidate ${pair.candidate_number}`;
  $("#same-query").hidden = !pair.same_query_as_previous;
  pairNotice.hidden = !notice;
  pairNotice.textContent = notice ?? "";
  updateSubmitState();
  focusHeading("#pair-heading");
  announce(
    (notice ? `${notice} ` : "") + (pair.same_query_as_previous ? "Same query, new candidate." : "New pair loaded."),
  );
}

const ENOUGH_JUDGMENTS = "The organizers have enough judgments to rank the systems — thank you!";

function showDone(message = "") {
  setState("done");
  // The API's message says why there is nothing to judge (closed, not open right now, every
  // pair judged); when the ranking is confident enough the page says it in its own words.
  const notOpen = /not open/i.test(message);
  $("#done-heading").textContent = notOpen ? "Not open right now" : "Thank you!";
  $("#done-message").textContent = !notOpen && (lastProgress?.can_stop || !message) ? ENOUGH_JUDGMENTS : message;
  $("#done-icon").hidden = notOpen;
  const mine = lastProgress?.assessor_judged ?? 0;
  $("#done-count").textContent =
    mine > 0 ? `You judged ${numberFormat.format(mine)} ${mine === 1 ? "pair" : "pairs"}.` : "";
  focusHeading("#done-heading");
}

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

function stopWaitTimer() {
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

function conflictNotice(error) {
  if (error.code === "campaign_closed") return "The campaign has just closed.";
  if (error.status === 410) {
    return "Your time on that pair ran out and it went to someone else, so it needs no score from you. Here is a new one.";
  }
  if (error.code === "pair_not_leased") {
    return "That pair was no longer yours to judge (perhaps it was finished in another tab). Here is a new one.";
  }
  return "You had already judged that pair (you can revise it under Recent judgments). Here is a new one.";
}

async function postJudgment(body) {
  try {
    return await api("POST", "judgments", body);
  } catch (error) {
    // One retry with the same client_id: if the first attempt did reach the server,
    // the API recognises the id and answers with the stored judgment.
    if (!(error instanceof NetworkError)) throw error;
    await sleep(RETRY_DELAY_MS);
    return api("POST", "judgments", body);
  }
}

async function submitJudgment() {
  if (submitting || current === null) return;
  if (!main.form.complete) {
    submitHint.classList.remove("is-nudged");
    void submitHint.offsetWidth; // restart the highlight animation
    submitHint.classList.add("is-nudged");
    announce(submitHint.textContent);
    return;
  }
  submitting = true;
  updateSubmitState();
  main.query.pause();
  main.candidate.pause();
  const body = {
    lease_id: current.pair.lease_id,
    broad: main.form.broad,
    fine: main.form.fine,
    client_id: current.clientId,
    query_listen_ms: main.query.listened(),
    candidate_listen_ms: main.candidate.listened(),
  };
  let notice = null;
  try {
    const result = await postJudgment(body);
    renderProgress(result?.progress);
    rememberJudgment(result?.judgment);
    announce("Judgment saved.");
  } catch (error) {
    if (error instanceof ApiError && (error.status === 409 || error.status === 410)) {
      notice = conflictNotice(error);
      // another tab may have judged it: show the list the notice refers to
      await refreshHistory();
    } else {
      submitting = false;
      updateSubmitState();
      submitError.textContent =
        error instanceof NetworkError
          ? "Could not reach the server. Your scores are still here: press Enter to try again."
          : error.message;
      submitError.hidden = false;
      return;
    }
  }
  submitting = false;
  current = null;
  await loadNext({ notice });
}

async function takeBreak() {
  main.query.pause();
  main.candidate.pause();
  stopWaitTimer();
  try {
    await api("POST", "pause");
  } catch (error) {
    // The lease expires on its own; the assessor should still be able to walk away.
    console.warn("pause failed", error);
  }
  setState("paused");
  focusHeading("#paused-heading");
}

// ---------------------------------------------------------------- recent judgments

const HISTORY_SIZE = 10;
let historyItems = [];

async function refreshHistory() {
  let data;
  try {
    data = await api("GET", "history");
  } catch {
    return;
  }
  historyItems = Array.isArray(data) ? data : (data?.judgments ?? []);
  renderHistory();
}

// The answers to POST and PUT carry the stored judgment: the list is updated from them
// rather than fetched again.
function rememberJudgment(judgment) {
  if (!judgment) return;
  const known = historyItems.some((item) => item.id === judgment.id);
  historyItems = known
    ? historyItems.map((item) => (item.id === judgment.id ? judgment : item))
    : [judgment, ...historyItems].slice(0, HISTORY_SIZE);
  renderHistory();
}

function renderHistory() {
  const judgments = historyItems;
  const list = $("#history-list");
  list.replaceChildren(
    ...judgments.map((judgment) => {
      const broad = el("span", { class: `chip chip--${judgment.broad}` }, BROAD_LABELS[judgment.broad] ?? "–");
      const fine = el(
        "span",
        { class: "history__fine" },
        `FINE ${judgment.fine === null ? "–" : Math.round(judgment.fine)}`,
      );
      const label = el(
        "span",
        { class: "history__pair" },
        `Query ${judgment.query_number} · candidate ${judgment.candidate_number}`,
      );
      const when = el(
        "span",
        { class: "history__when" },
        formatAgo(judgment.created_at) + (judgment.revision > 0 ? " · revised" : ""),
      );
      const button = el(
        "button",
        {
          type: "button",
          class: "button button--small",
          "aria-label": `Edit the judgment of ${label.textContent} from ${when.textContent}: ${broad.textContent}, ${fine.textContent}`,
          "data-judgment-id": judgment.id,
        },
        "Edit",
      );
      // detail is 0 for a click made with the keyboard (Enter or Space on the button)
      button.addEventListener("click", (event) => openRevision(judgment, event.detail > 0));
      const details = el("span", { class: "history__details" });
      details.append(label, " · ", fine, " · ", when);
      const item = el("li", { class: "history__item" });
      item.append(broad, details, button);
      return item;
    }),
  );
  $("#history-empty").hidden = judgments.length > 0;
}

let editedId = null;
let editByPointer = false;

function openRevision(judgment, byPointer) {
  edit.judgment = judgment;
  editedId = judgment.id;
  editByPointer = byPointer;
  main.query.pause();
  main.candidate.pause();
  edit.form.fill(judgment.broad, judgment.fine);
  edit.query.load(judgment.query);
  edit.candidate.load(judgment.candidate);
  $("#edit-when").textContent =
    `Judged ${formatAgo(judgment.created_at)}. Listen again if you like, then change the scores.`;
  $("#edit-error").hidden = true;
  editDialog.showModal();
}

function closeRevision() {
  if (editDialog.open) editDialog.close();
}

editDialog.addEventListener("close", () => {
  edit.query.unload();
  edit.candidate.unload();
  edit.judgment = null;
  // Keyboard users go back to the Edit button of that judgment (the list may have been
  // redrawn meanwhile); after a mouse click, focus rests where Enter submits the pair.
  const opener = $(`#history-list button[data-judgment-id="${editedId}"]`);
  if (opener && !editByPointer) opener.focus();
  else restFocus();
  editedId = null;
});

async function saveRevision() {
  const judgment = edit.judgment;
  const errorBox = $("#edit-error");
  if (judgment === null) return;
  if (!edit.form.complete) {
    errorBox.textContent = "Choose BROAD and set FINE before saving.";
    errorBox.hidden = false;
    return;
  }
  const saveButton = $("#edit-save");
  saveButton.disabled = true;
  try {
    const result = await api("PUT", `judgments/${encodeURIComponent(judgment.id)}`, {
      broad: edit.form.broad,
      fine: edit.form.fine,
    });
    renderProgress(result?.progress);
    rememberJudgment(result?.judgment);
    closeRevision();
    announce("Judgment revised.");
  } catch (error) {
    errorBox.textContent = error instanceof NetworkError ? "Could not reach the server; try again." : error.message;
    errorBox.hidden = false;
  } finally {
    saveButton.disabled = false;
  }
}

// ---------------------------------------------------------------- keyboard

function isTyping(target) {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["range", "radio", "checkbox", "button", "submit", "reset"].includes(target.type);
  }
  return false;
}

function activeContext() {
  if (editDialog.open) return edit;
  if (root.dataset.state === "pair" && current !== null) return main;
  return null;
}

let helpByPointer = false;

function toggleHelp(byPointer = false) {
  if (helpDialog.open) {
    helpDialog.close();
  } else {
    helpByPointer = byPointer;
    helpDialog.showModal();
  }
}

helpDialog.addEventListener("close", () => {
  if (helpByPointer) restFocus();
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (isTyping(target)) return;

  if (event.key === "?") {
    event.preventDefault();
    toggleHelp();
    return;
  }
  if (helpDialog.open) return; // Esc closes it natively

  const context = activeContext();
  if (context === null) return;
  const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
  switch (key) {
    case "1":
    case "2":
    case "3":
      event.preventDefault();
      context.form.broad = Number(key) - 1;
      break;
    case "q":
      event.preventDefault();
      if (event.shiftKey) context.query.restart();
      else context.query.toggle();
      break;
    case "c":
      event.preventDefault();
      if (event.shiftKey) context.candidate.restart();
      else context.candidate.toggle();
      break;
    case "ArrowLeft":
    case "ArrowRight": {
      // A focused seek bar keeps its own arrows (seeking by keyboard).
      if (target instanceof HTMLInputElement && target.dataset.role === "seek") return;
      event.preventDefault();
      const step = event.shiftKey ? 10 : 1;
      context.form.nudgeFine(key === "ArrowLeft" ? -step : step);
      break;
    }
    case "Enter":
      // Enter on a focused button or link keeps its own meaning (play, edit, ...).
      if ((target instanceof HTMLButtonElement && target.type !== "submit") || target instanceof HTMLAnchorElement) {
        return;
      }
      event.preventDefault();
      context.submit();
      break;
    default:
  }
});

// ---------------------------------------------------------------- wiring

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
// A click on the backdrop (outside the box) closes the help.
helpDialog.addEventListener("click", (event) => {
  if (event.target === helpDialog) helpDialog.close();
});
pauseButton.addEventListener("click", takeBreak);
$("#resume-button").addEventListener("click", () => loadNext());
$("#wait-retry").addEventListener("click", () => {
  stopWaitTimer();
  loadNext();
});
$("#error-retry").addEventListener("click", () => loadNext());
// Keep "Listened" ticking between timeupdate events.
setInterval(() => {
  for (const player of allPlayers) if (player.playingSince !== null) player.render();
}, 500);

async function start() {
  const link = $("#resume-link");
  link.textContent = new URL(link.textContent, window.location.href).href;
  if (root.dataset.state === "done") {
    setState("done");
    try {
      renderProgress(await api("GET", "progress"));
    } catch {
      // the thank-you page stands on its own
    }
    showDone(root.dataset.doneMessage);
    return;
  }
  await loadNext();
  refreshHistory();
}

start();
