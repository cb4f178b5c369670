// When a request of the judging page fails: whether to try it again (and the idempotency key
// that makes sending a judgment again harmless), and what to tell the volunteer about a pair
// that was no longer theirs to judge. Pure: no DOM, no fetch.

/** Wait `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Call `attempt` (a function answering a promise) and, when it fails with an error that
 * `retryable` accepts, again after `delayMs`, up to `retries` more times; the last error is
 * thrown as it is. `wait` is how it waits (`sleep`, unless a test says otherwise).
 */
export async function withRetry(attempt, { retries, delayMs, retryable, wait = sleep }) {
  for (let tried = 0; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (tried >= retries || !retryable(error)) throw error;
      await wait(delayMs);
    }
  }
}

/** Whether a judgment was refused because the pair is no longer the assessor's (409, 410). */
export function isConflict(status) {
  return status === 409 || status === 410;
}

/**
 * The notice over the next pair after a judgment was refused as a conflict, from the
 * answer's `status` and `code`.
 */
export function conflictNotice({ status, code }) {
  if (code === "campaign_closed") return "The campaign has just closed.";
  if (status === 410) {
    return "Your time on that pair ran out and it went to someone else, so it needs no score from you. Here is a new one.";
  }
  if (code === "pair_unplayable") {
    return "That pair can no longer be played (one of its clips is missing on the server), so it needs no score from you. Here is a new one.";
  }
  if (code === "pair_not_leased") {
    return "That pair was no longer yours to judge (perhaps it was finished in another tab). Here is a new one.";
  }
  return "You had already judged that pair (you can revise it under Recent judgments). Here is a new one.";
}

/**
 * A version 4 UUID (the judgment's idempotency key, which makes sending it again harmless)
 * from 16 random bytes: the version and variant bits set, written as 8-4-4-4-12 hex digits.
 */
export function uuidV4(random) {
  const bytes = Uint8Array.from(random);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
