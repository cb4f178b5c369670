// The judging page's keys and what they do, as data: the page-wide shortcuts (the help
// dialog lists them: templates/partials/shortcuts.html) and a focused waveform's keys.
// Pure: a key name (KeyboardEvent.key) and Shift in, an action out; no DOM.

/** Seconds a seek moves: ← → on a waveform and J L; with Shift (and Page Up / Page Down) the big step. */
export const SEEK_STEP = 1;
export const SEEK_BIG_STEP = 5;
/** FINE points ← → move (with Shift, the big step). */
const FINE_STEP = 1;
const FINE_BIG_STEP = 10;

/**
 * The page-wide shortcut for `key` (letters in either case), or null:
 * {do: "help"}, {do: "broad", value}, {do: "toggle" | "restart", clip: "query" | "candidate"},
 * {do: "seek", by} (seconds), {do: "mark", edge: "start" | "end"}, {do: "clear-loop"},
 * {do: "fine", by} (points), {do: "submit"}.
 */
export function shortcut(key, shift) {
  const name = key.length === 1 ? key.toLowerCase() : key;
  switch (name) {
    case "?":
      return { do: "help" };
    case "1":
    case "2":
    case "3":
      return { do: "broad", value: Number(name) - 1 };
    case "q":
    case "c":
      return { do: shift ? "restart" : "toggle", clip: name === "q" ? "query" : "candidate" };
    case "j":
    case "l":
      return { do: "seek", by: (name === "j" ? -1 : 1) * (shift ? SEEK_BIG_STEP : SEEK_STEP) };
    case "a":
    case "b":
      return { do: "mark", edge: name === "a" ? "start" : "end" };
    case "x":
      return { do: "clear-loop" };
    case "ArrowLeft":
    case "ArrowRight": {
      const step = shift ? FINE_BIG_STEP : FINE_STEP;
      return { do: "fine", by: name === "ArrowLeft" ? -step : step };
    }
    case "Enter":
      return { do: "submit" };
    default:
      return null;
  }
}

const WAVE_MOVES = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1 };

/**
 * What `key` does on a focused waveform (a slider in seconds), or null:
 * {do: "seek", by} (seconds), {do: "toggle"} (Space), {do: "home"}, {do: "end"}.
 */
export function waveKey(key, shift) {
  if (Object.hasOwn(WAVE_MOVES, key)) return { do: "seek", by: WAVE_MOVES[key] * (shift ? SEEK_BIG_STEP : SEEK_STEP) };
  if (key === "PageDown") return { do: "seek", by: -SEEK_BIG_STEP };
  if (key === "PageUp") return { do: "seek", by: SEEK_BIG_STEP };
  if (key === " ") return { do: "toggle" };
  if (key === "Home") return { do: "home" };
  if (key === "End") return { do: "end" };
  return null;
}
