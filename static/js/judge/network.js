// The assessor API (/api/a/{token}/...), through lib.js: no CSRF token, since the
// assessor's token in the path is the credential. Each call answers the JSON of the answer,
// or rejects with lib.js's NetworkError (not reached) or ApiError (an error status).

import { NetworkError, api as send } from "../lib.js";
import { withRetry } from "./failures.js";
import { API } from "./page.js";

/** How long to wait before sending a judgment again after a network failure. */
const RETRY_DELAY_MS = 800;

function call(method, path, body) {
  return send(`${API}/${path}`, { method, json: body, cache: "no-store" });
}

/** The next pair to judge: {status: "pair" | "wait" | "done", pair, message, progress}. */
export const fetchNext = () => call("GET", "next");

export const fetchProgress = () => call("GET", "progress");

/** The assessor's recent judgments. */
export const fetchHistory = () => call("GET", "history");

/** Give the leased pair back: the assessor takes a break. */
export const pause = () => call("POST", "pause");

/**
 * Send a judgment ({lease_id, broad, fine, client_id, ...}), once more after a network
 * failure: with the same client_id, the API recognises a first attempt that did arrive and
 * answers with the stored judgment.
 */
export function postJudgment(body) {
  return withRetry(() => call("POST", "judgments", body), {
    retries: 1,
    delayMs: RETRY_DELAY_MS,
    retryable: (error) => error instanceof NetworkError,
  });
}

/** Change the scores ({broad, fine}) of one of the assessor's judgments. */
export function reviseJudgment(id, scores) {
  return call("PUT", `judgments/${encodeURIComponent(id)}`, scores);
}
