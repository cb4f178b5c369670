// The small library every page script imports (static/js/*.js are ES modules, loaded with
// <script type="module">; the CSP is default-src 'self', so no inline script and no style
// attribute: styles are set through the CSSOM).
//
// - request / api: fetch on the same origin with JSON in and out, the session's CSRF token
//   (X-CSRF-Token) on changes, and one way of reporting failures (NetworkError, ApiError);
//   fetchBytes for a file's bytes (the judging page's clips), fetchAttachment for a download
//   with its name (the dashboard's exports), sendWithProgress for an upload whose progress
//   is shown (the new-campaign page's audio);
// - $, $$, byId, el: DOM look-ups and element creation;
// - formatInt, readFile: the number format and the file reading the organizer pages share.

// ---------------------------------------------------------------- fetch

/** The request did not reach the server (offline, DNS, connection refused, CORS). */
export class NetworkError extends Error {
  constructor(message) {
    super(message);
    this.name = "NetworkError";
  }
}

/** The server answered with an error status; `detail` is its explanation, in its words. */
export class ApiError extends Error {
  constructor(status, code, detail, data = null) {
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.data = data;
  }
}

/**
 * The explanation in an error answer: its `detail`, or the messages of a validation error
 * (a list of {msg}) joined by "; "; null when the answer has none.
 */
export function errorDetail(data) {
  const detail = data?.detail;
  if (Array.isArray(detail)) return detail.map((item) => item?.msg).join("; ") || null;
  return detail ? String(detail) : null;
}

/**
 * Send one request on the same origin and read its JSON answer, whatever its status.
 *
 * `json` is sent as JSON; `body` (a Blob, a File...) is sent as it is, with `contentType`.
 * `csrf` adds the X-CSRF-Token header the organizer API asks of every change; `cache` is
 * passed to fetch. Resolves to {status, ok, data} (data is null for 204 or an answer that is
 * not JSON); rejects with a NetworkError when the server could not be reached.
 */
export async function request(url, { method = "GET", json, body, contentType, csrf, cache } = {}) {
  const headers = { Accept: "application/json" };
  let payload = body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(json);
  } else if (contentType) {
    headers["Content-Type"] = contentType;
  }
  if (csrf) headers["X-CSRF-Token"] = csrf;
  let response;
  try {
    response = await fetch(url, { method, headers, body: payload, cache, credentials: "same-origin" });
  } catch (error) {
    throw new NetworkError(error.message);
  }
  let data = null;
  if (response.status !== 204) {
    try {
      data = await response.json();
    } catch {
      data = null;
    }
  }
  return { status: response.status, ok: response.ok, data };
}

/**
 * Send `body` (a File, a Blob) with XMLHttpRequest, which, unlike fetch, reports how much of
 * it went out: `onProgress(loaded)` as it is sent, `onSent()` once all of it is. `csrf` adds
 * the X-CSRF-Token header; `holder.xhr` is set to the request, so that it can be aborted.
 * Resolves to {status, data} (data null when the answer is not JSON); rejects with a
 * NetworkError when the server could not be reached, and an AbortError when aborted.
 */
export function sendWithProgress(url, body, { method = "PUT", csrf, onProgress, onSent, holder = {} } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.setRequestHeader("Accept", "application/json");
    if (csrf) xhr.setRequestHeader("X-CSRF-Token", csrf);
    if (onProgress) xhr.upload.addEventListener("progress", (event) => onProgress(event.loaded));
    if (onSent) xhr.upload.addEventListener("load", onSent);
    xhr.addEventListener("load", () => {
      let data = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        data = null;
      }
      resolve({ status: xhr.status, data });
    });
    xhr.addEventListener("error", () => reject(new NetworkError("the connection to the server failed")));
    xhr.addEventListener("abort", () => reject(new DOMException("the request was aborted", "AbortError")));
    holder.xhr = xhr;
    xhr.send(body);
  });
}

/**
 * `request`, answering the JSON of a successful answer (null for 204) and rejecting with an
 * ApiError (status, the answer's `error` code, its explanation) for an error status.
 */
export async function api(url, options) {
  const { status, ok, data } = await request(url, options);
  if (!ok) {
    throw new ApiError(status, data?.error ?? "error", errorDetail(data) ?? `The server answered ${status}.`, data);
  }
  return data;
}

/**
 * The bytes of a same-origin file (an audio clip), as an ArrayBuffer. Rejects with a
 * NetworkError when the server could not be reached, an ApiError for an error status, and
 * the AbortError itself when `signal` aborted it.
 */
export async function fetchBytes(url, { signal } = {}) {
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin", signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new NetworkError(error.message);
  }
  if (!response.ok) {
    throw new ApiError(response.status, "error", `The server answered ${response.status}.`);
  }
  return response.arrayBuffer();
}

/**
 * A same-origin attachment (an export): resolves to {ok: true, status, blob, name}, `name`
 * from its Content-Disposition (null without one), or for an error status to {ok: false,
 * status, data}, data the JSON error body (null when it is not JSON). Rejects with a
 * NetworkError when the server could not be reached.
 */
export async function fetchAttachment(url) {
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin" });
  } catch (error) {
    throw new NetworkError(error.message);
  }
  if (!response.ok) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    return { ok: false, status: response.status, data };
  }
  const match = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  return { ok: true, status: response.status, blob: await response.blob(), name: match ? match[1] : null };
}

// ---------------------------------------------------------------- DOM

/** The first element matching `selector` in `scope`, or null. */
export const $ = (selector, scope = document) => scope.querySelector(selector);

/** Every element matching `selector` in `scope`, as an array. */
export const $$ = (selector, scope = document) => [...scope.querySelectorAll(selector)];

/** The element of this id, or null. */
export const byId = (id) => document.getElementById(id);

/** A new HTML element with these attributes and, unless null or undefined, this text. */
export function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== null && text !== undefined) node.textContent = String(text);
  return node;
}

// ---------------------------------------------------------------- formats and files

/** 1234 -> "1,234" (the organizer pages' number format); "—" for null or undefined. */
export function formatInt(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en");
}

/** A chosen file's name and text, read now (a file changed on disk since is read again). */
export async function readFile(file) {
  try {
    return { name: file.name, text: await file.text() };
  } catch {
    throw new Error(`${file.name}: the browser could not read this file`);
  }
}
