// The way in, before the first real pair (docs/judging-page.md): the volume check, with its
// test sound, once per browser session; and the optional practice pair, made in the browser,
// scored like a real one and never sent.

import { $ } from "../lib.js";
import { audioContext, practiceClips, resumeAudio, testSound } from "./audio.js";
import { API, announce, CAMPAIGN_LISTEN_SECONDS, focusHeading, root } from "./page.js";
import { beginPair, forgetPair, labelPair, levelsNote, main, updateSubmitState } from "./pair.js";
import { levelPair } from "./player.js";
import { loadNext, onStateChange, setState } from "./session.js";

// ---------------------------------------------------------------- volume check

const CHECK_KEY = `mtcjudge:volume-checked:${API}`;
let testSource = null;
let testBuffer = null;

/** Whether this browser session has done the volume check for this link. */
export function volumeChecked() {
  try {
    return sessionStorage.getItem(CHECK_KEY) === "yes";
  } catch {
    return false; // storage blocked: ask again, it is quick
  }
}

function rememberVolumeChecked() {
  try {
    sessionStorage.setItem(CHECK_KEY, "yes");
  } catch {
    // storage blocked: the check comes back on the next visit
  }
}

function renderCheck() {
  const playing = testSource !== null;
  $("#check-play").setAttribute("aria-pressed", String(playing));
  $("#check-play-text").textContent = playing ? "Stop the test sound" : "Play the test sound";
}

function stopTestSound() {
  const source = testSource;
  if (source === null) return;
  testSource = null;
  source.onended = null;
  try {
    source.stop();
  } catch {
    // already ended
  }
  renderCheck();
}

onStateChange((name) => {
  if (name !== "check") stopTestSound();
});

/** Play the test sound, or stop it. */
export async function toggleTestSound() {
  if (testSource !== null) {
    stopTestSound();
    return;
  }
  const ctx = audioContext();
  testBuffer ??= testSound();
  const source = ctx.createBufferSource();
  source.buffer = testBuffer;
  source.connect(ctx.destination);
  source.onended = () => {
    if (testSource === source) {
      testSource = null;
      renderCheck();
    }
  };
  source.start();
  testSource = source;
  root.dataset.testSoundPlayed = "true";
  renderCheck();
  if (!(await resumeAudio())) announce("Your browser blocked the sound: press the button again.");
}

export function showCheck() {
  setState("check");
  renderCheck();
  focusHeading("#check-heading");
}

/** The volume is fine: on to the practice pair (`practice`) or the first real one. */
export function leaveCheck(practice) {
  rememberVolumeChecked();
  stopTestSound();
  if (practice) showPractice();
  else loadNext();
}

// ---------------------------------------------------------------- practice pair

/** The practice pair: made in the browser, scored like a real one, never sent. */
function showPractice() {
  setState("pair");
  beginPair(
    { pair: { lease_id: null }, clientId: null, practice: true, finish: finishPractice },
    CAMPAIGN_LISTEN_SECONDS,
  );
  root.dataset.leaseId = "";
  const clips = practiceClips();
  main.query.loadBuffer(clips.query);
  main.candidate.loadBuffer(clips.candidate);
  levelPair(main, levelsNote);
  labelPair({ label: "practice, not recorded", sameQuery: false, practice: true, notice: null });
  updateSubmitState();
  focusHeading("#pair-heading");
  announce("Practice pair: nothing you do here is recorded.");
}

/** Submit on the practice pair: nothing is sent; the first real pair comes with a notice. */
async function finishPractice() {
  main.query.pause();
  main.candidate.pause();
  forgetPair();
  announce("Practice finished: nothing was recorded.");
  await loadNext({ notice: "Practice finished: nothing was recorded. This is your first real pair." });
}
