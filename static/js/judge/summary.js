// What the side panel and the closing panel say, from the API's answers: the progress
// figures, the recent-judgments list, and the words of the "done" panel. Pure: no DOM.

import { formatCount } from "./format.js";

/** How many judgments the recent list keeps (the API sends as many). */
export const HISTORY_SIZE = 10;

export const ENOUGH_JUDGMENTS = "The organizers have enough judgments to rank the systems — thank you!";

/** `part` of `whole` in % (0 to 100; 0 when there is no whole). */
export function percent(part, whole) {
  return whole > 0 ? Math.min(100, (100 * part) / whole) : 0;
}

/** The figures of the API's progress (missing or unreadable counts are 0). */
export function progressFigures(progress) {
  const pairs = Number(progress.campaign_pairs) || 0;
  const judged = Number(progress.campaign_judged) || 0;
  const systemPairs = Number(progress.system_pairs) || 0;
  const settled = Number(progress.system_pairs_settled) || 0;
  return {
    mine: Number(progress.assessor_judged) || 0,
    pairs,
    judged,
    share: percent(judged, pairs),
    systemPairs,
    settled,
    settledShare: percent(settled, systemPairs),
    canStop: Boolean(progress.can_stop),
  };
}

/**
 * The "done" panel for the API's `message` (why there is nothing to judge) and the last
 * progress seen (or null): {heading, message, icon, count}. When the ranking is confident
 * enough, or the API says nothing, the page thanks in its own words; "not open" is no thanks.
 */
export function doneWords(message, progress) {
  const notOpen = /not open/i.test(message);
  const mine = progress?.assessor_judged ?? 0;
  return {
    heading: notOpen ? "Not open right now" : "Thank you!",
    message: !notOpen && (progress?.can_stop || !message) ? ENOUGH_JUDGMENTS : message,
    icon: !notOpen,
    count: mine > 0 ? `You judged ${formatCount(mine)} ${mine === 1 ? "pair" : "pairs"}.` : "",
  };
}

/** The judgments of the API's history answer (a list, or {judgments}). */
export function historyFrom(data) {
  return Array.isArray(data) ? data : (data?.judgments ?? []);
}

/**
 * The recent list with `judgment` (a stored judgment from POST or PUT) in it: replacing the
 * one of the same id where it is, else first, keeping HISTORY_SIZE at most. Null changes nothing.
 */
export function withJudgment(items, judgment) {
  if (!judgment) return items;
  const known = items.some((item) => item.id === judgment.id);
  return known
    ? items.map((item) => (item.id === judgment.id ? judgment : item))
    : [judgment, ...items].slice(0, HISTORY_SIZE);
}
