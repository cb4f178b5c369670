// How the judging page writes times, ages, counts and gains. Pure: no DOM, no audio.

const numberFormat = new Intl.NumberFormat();

/** 1234 -> "1,234" in the browser's language (the assessor's own counts). */
export function formatCount(n) {
  return numberFormat.format(n);
}

/** 83.4 -> "1:23" (or "1:23.4" when `precise`); 0:00 for a negative, infinite or missing time. */
export function formatTime(seconds, precise = false) {
  const value = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  if (precise) {
    const tenths = Math.round(value * 10);
    const whole = Math.floor(tenths / 10);
    return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}.${tenths % 10}`;
  }
  const whole = Math.floor(value);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

/** How long ago `iso` was, at `now` (ms): "just now", "12 min ago", "3 h ago", else the date. */
export function formatAgo(iso, now = Date.now()) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, (now - then) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}

/** 5 -> "5 s", 2.5 -> "2.5 s" (the rule's seconds, rounded up to a tenth). */
export function formatSeconds(seconds) {
  const tenths = Math.ceil(seconds * 10 - 1e-6) / 10;
  return `${Number.isInteger(tenths) ? tenths : tenths.toFixed(1)}\u00a0s`;
}

/** "a", "a and b", "a, b and c". */
export function joinAnd(parts) {
  return parts.length < 2 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
}

/** A clip's gain: "+3.2 dB", "−1.0 dB", "±0.0 dB" within 0.05 dB of nothing. */
export function formatGain(db) {
  const sign = db > 0.05 ? "+" : db < -0.05 ? "−" : "±";
  return `${sign}${Math.abs(db).toFixed(1)} dB`;
}
