// What a pair asks before it can be submitted: the campaign's listening rule (each clip heard
// for some seconds, or to its end), a BROAD category and a FINE score, and what the Submit
// hint says is missing. Pure: no DOM, no audio.

import { formatSeconds, formatTime, joinAnd } from "./format.js";

/** Seconds of listening the rule (`rule` seconds, 0: none) asks of a clip `duration` long. */
export function requiredSeconds(rule, duration) {
  if (rule <= 0) return 0;
  return duration > 0 ? Math.min(rule, duration) : rule;
}

/** Whether `listenedMs` of sound meets a need of `need` seconds (always, with no need). */
export function heardEnough(listenedMs, need) {
  return need <= 0 || listenedMs >= Math.round(need * 1000);
}

/** The rule as the page states it above the players ("" without one). */
export function ruleText(seconds) {
  if (seconds <= 0) return "";
  const rule = String(Math.round(seconds * 100) / 100);
  return (
    `Listen to each clip for at least ${rule} ${seconds === 1 ? "second" : "seconds"} (or to its end) ` +
    "before you submit: skipping ahead does not count."
  );
}

/**
 * A player's listening line and bar for `listened` seconds heard of `need` (0: no rule),
 * `met` whether the rule is met: {line} without a rule, else {line, share, valueText} (share
 * in %, 99 at most until the rule is met).
 */
export function listeningStatus(listened, need, met) {
  if (need <= 0) return { line: `Listened ${formatTime(listened)}` };
  return {
    line: met
      ? `✓ Heard long enough (${formatTime(listened)})`
      : `Listened ${formatTime(listened)} of ${formatTime(Math.ceil(need))} needed`,
    share: met ? 100 : Math.min(99, (100 * listened) / need),
    valueText: met ? "heard long enough" : `${Math.floor(listened)} of ${Math.ceil(need)} seconds heard`,
  };
}

/** What is left to hear, for clips [{label, required}] not yet heard long enough. */
export function listeningNeed(unheard) {
  const seconds = unheard.map((clip) => formatSeconds(clip.required));
  if (unheard.length === 2 && seconds[0] === seconds[1]) return `listen to both clips for ${seconds[0]} each`;
  return `listen to ${joinAnd(unheard.map((clip, i) => `the ${clip.label} for ${seconds[i]}`))}`;
}

/** A FINE score as the slider holds it: a whole number from 0 to 100. */
export function clampFine(value) {
  return Math.max(0, Math.min(100, Math.round(value)));
}

/** FINE after ←/→ (`delta`): 50 the first time (`fine` null), else moved and clamped. */
export function nudgedFine(fine, delta) {
  return fine === null ? 50 : clampFine(fine + delta);
}

/** Whether BROAD (0, 1, 2) and FINE (0–100) seem to disagree (each may still be null). */
export function scoresDisagree(broad, fine) {
  if (broad === null || fine === null) return false;
  return (broad === 2 && fine < 40) || (broad === 0 && fine > 60) || (broad === 1 && (fine < 15 || fine > 85));
}

/**
 * The Submit hint: `submitting`, `broken` (a clip did not load), `ready`, `practice` (the
 * practice pair), `unheard` (clips [{label, required}] the rule still asks to hear), and the
 * scores `broad` and `fine` (null when not given).
 */
export function submitHint({ submitting, broken, ready, practice, unheard, broad, fine }) {
  if (submitting) return "Saving…";
  if (broken) {
    return "A clip of this pair did not load, so it cannot be judged. Please tell the organizer; Take a break gives the pair back.";
  }
  if (ready) return practice ? "Ready: press Enter to finish the practice." : "Ready: press Enter to submit.";
  const needs = [];
  if (unheard.length > 0) needs.push(listeningNeed(unheard));
  if (broad === null) needs.push("choose BROAD");
  if (fine === null) needs.push("set FINE");
  return `To submit: ${joinAnd(needs)}.`;
}
