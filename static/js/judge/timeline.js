// A clip's clock: where playing has got to, where play starts, the loop a drag or the A and B
// keys make, and how much sound was rendered. Pure: times in seconds, a loop {start, end}
// or null; no DOM, no audio.

/** A loop shorter than this (seconds) is refused: a shorter drag is a click. */
export const MIN_LOOP = 0.25;

/**
 * The position `elapsed` seconds after a source started at `startOffset`: it wraps inside
 * the loop (once it has reached the loop's end from before it) and stops at `duration`.
 */
export function positionAfter(startOffset, elapsed, loop, duration) {
  const raw = startOffset + elapsed;
  if (loop && raw >= loop.end && startOffset < loop.end) {
    const length = loop.end - loop.start;
    return loop.start + ((raw - loop.start) % length);
  }
  return Math.min(raw, duration);
}

/**
 * Seconds of sound rendered by a source that started at `startOffset` and has run `elapsed`
 * seconds: all of it when looping, else no more than the rest of the clip.
 */
export function heardSeconds(startOffset, elapsed, loop, duration) {
  return loop ? elapsed : Math.min(elapsed, duration - startOffset);
}

/** Where play starts from `position`: the start after the end, the loop's start outside it. */
export function playStart(position, loop, duration) {
  let from = position;
  if (from >= duration - 0.01) from = 0;
  if (loop && (from < loop.start || from >= loop.end)) from = loop.start;
  return from;
}

/**
 * The loop from `start` to `end` (either may be null: from the start, to the end), inside the
 * clip and in order; null when it would last less than MIN_LOOP.
 */
export function loopBetween(start, end, duration) {
  let from = Math.max(0, start ?? 0);
  let to = Math.min(duration, end ?? duration);
  if (to < from) [from, to] = [to, from];
  if (to - from < MIN_LOOP) return null;
  return { start: from, end: to };
}

/**
 * The [start, end] a mark at `here` asks for (null: an open end): A ("start") loops from here
 * (to the current loop's end, when that is later), B ("end") until here (from the current
 * loop's start, when that is earlier, else from the clip's start).
 */
export function markedLoop(edge, here, loop) {
  if (edge === "start") return [here, loop && loop.end > here ? loop.end : null];
  return [loop && loop.start < here ? loop.start : 0, here];
}

/** The time under a pointer at `x` on a waveform from `left`, `width` wide (clamped to the clip). */
export function timeAtX(x, left, width, duration) {
  const fraction = width > 0 ? (x - left) / width : 0;
  return Math.max(0, Math.min(1, fraction)) * duration;
}
