// How clips are cut, the pure part (no DOM, tested by tests/js/clip_cut.test.js): the words of
// the new-campaign page's choices (templates/campaign_new.html), which follow the excerpt
// length and start the organizer types. manage.js puts them on the page.

// a number as the page shows it: 30, 12.5, 33.3 (no trailing zeros)
const short = (value, digits) => String(Number(value.toFixed(digits)));

// a typed number within [min, max] (below `max` when `open`), else null
function within(text, min, max, open = false) {
  if (String(text ?? "").trim() === "") return null;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || (open ? value >= max : value > max)) return null;
  return value;
}

/**
 * The labels of the excerpt choices for the typed length (`seconds`, seconds from `min` to
 * `max`) and start (`fraction`, a share of the file from 0 to below 1), as texts:
 * {excerpt: "30-second excerpts (from 30 % of the way in)", offsets: "30-second excerpts
 * from a start given per file"}. A length or start out of range is left out of the words
 * ("Excerpts ...") rather than shown wrong.
 */
export function cutLabels(seconds, fraction, { min = 3, max = 600 } = {}) {
  const length = within(seconds, min, max);
  const start = within(fraction, 0, 1, true);
  const what = length === null ? "Excerpts" : `${short(length, 2)}-second excerpts`;
  const from = start === null ? "" : ` (from ${short(start * 100, 1)}\u00a0% of the way in)`;
  return { excerpt: `${what}${from}`, offsets: `${what} from a start given per file` };
}
