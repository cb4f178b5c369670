// Audio from the browser, on the new-campaign page (templates/campaign_new.html): a folder's
// audio files sent one by one, or one zip, to the organizer API (POST /api/audio-uploads, then
// PUT .../files/{name} or PUT .../zip with the raw bytes, then POST .../complete), with a
// progress bar, a cancel button and, at the end, the files that cannot be used and why. The
// campaign is then created with the upload's token (manage.js). The files go out with
// lib.js's sendWithProgress (XMLHttpRequest: fetch does not report what it has sent).

import { chooseFiles, formatBytes, progressText } from "./audio_files.js";
import { byId, el, errorDetail, request, sendWithProgress } from "./lib.js";

class Cancelled extends Error {}

/** PUT `body` (a File); resolves to {status, json}; a cancelled request rejects with Cancelled. */
async function put(url, body, { csrf, onProgress, onSent, current }) {
  try {
    const { status, data } = await sendWithProgress(url, body, { csrf, onProgress, onSent, holder: current });
    return { status, json: data };
  } catch (error) {
    if (error.name === "AbortError") throw new Cancelled("cancelled");
    throw error;
  }
}

/** The message of an error answer. */
function failure(status, json) {
  if (status === 401) return "Your session has ended: sign in again (in another tab), then upload again.";
  if (status === 403) return "The page is out of date: reload it and try again.";
  return errorDetail(json) || `The server answered ${status}.`;
}

/** The problems of an upload as a table, in a region that scrolls and takes the focus. */
function problemsTable(bad) {
  const body = el("tbody");
  for (const file of bad) {
    const row = el("tr");
    row.append(el("td", {}, file.file_name), el("td", {}, file.problem));
    body.append(row);
  }
  const head = el("thead");
  const headRow = el("tr");
  headRow.append(el("th", { scope: "col" }, "File"), el("th", { scope: "col" }, "Reason"));
  head.append(headRow);
  const table = el("table", { class: "data-table" });
  table.append(el("caption", { id: "upload-problems-caption" }, "Files that cannot be used"), head, body);
  const wrap = el("div", {
    class: "table-wrap",
    role: "region",
    "aria-labelledby": "upload-problems-caption",
    tabindex: "0",
  });
  wrap.append(table);
  return wrap;
}

/** The upload part of the new-campaign page: its controls, and the upload it has made. */
class AudioUpload {
  constructor(part, { csrf, changed }) {
    this.part = part;
    this.csrf = csrf;
    this.changed = changed;
    this.url = part.dataset.url;
    for (const [key, id] of Object.entries({
      folder: "field-audio_folder",
      zip: "field-audio_zip",
      button: "upload-button",
      cancel: "upload-cancel",
      progress: "upload-progress",
      bar: "upload-bar",
      text: "upload-text",
      status: "upload-status",
      report: "upload-report",
    })) {
      this[key] = byId(id);
    }
    this.token = null; // the complete upload's
    this.run = null; // the running upload: {current: {xhr}, cancelled, token}
  }

  source() {
    return document.querySelector("input[name=audio_source]:checked")?.value || "server";
  }

  showSource() {
    const upload = this.source() === "upload";
    this.part.hidden = !upload;
    byId("audio-server-part").hidden = upload;
  }

  forget(message) {
    if (this.token === null) return;
    this.token = null;
    this.report.hidden = true;
    this.report.replaceChildren();
    this.status.textContent = message;
    this.changed();
  }

  setRunning(on) {
    this.button.disabled = on;
    this.folder.disabled = on;
    this.zip.disabled = on;
    this.cancel.hidden = !on;
    this.progress.hidden = !on;
    this.part.setAttribute("aria-busy", on ? "true" : "false");
  }

  show(state) {
    this.bar.max = Math.max(1, state.bytesTotal);
    this.bar.value = state.bytesDone;
    this.text.textContent = progressText(state);
  }

  async sendFolder(files, limits, state) {
    const { send, tooLarge, skipped } = chooseFiles(files, limits.max_file_bytes);
    Object.assign(state, { filesDone: 0, filesTotal: send.length, bytesDone: 0 });
    state.bytesTotal = send.reduce((sum, file) => sum + file.size, 0);
    this.show(state);
    for (const file of send) {
      if (this.run.cancelled) throw new Cancelled("cancelled");
      const before = state.bytesDone;
      const answer = await put(`${this.url}/${this.run.token}/files/${encodeURIComponent(file.name)}`, file, {
        csrf: this.csrf,
        current: this.run.current,
        onProgress: (loaded) => this.show({ ...state, bytesDone: before + loaded }),
      });
      if (answer.status !== 200 && answer.status !== 413) throw new Error(failure(answer.status, answer.json));
      state.filesDone += 1;
      state.bytesDone = before + file.size;
      this.show(state);
    }
    return { tooLarge, skipped };
  }

  async sendZip(file, state) {
    Object.assign(state, { bytesDone: 0, bytesTotal: file.size });
    this.show(state);
    const answer = await put(`${this.url}/${this.run.token}/zip`, file, {
      csrf: this.csrf,
      current: this.run.current,
      onProgress: (loaded) => this.show({ ...state, bytesDone: loaded }),
      onSent: () => {
        this.text.textContent = `${formatBytes(file.size)} sent: checking the files in the zip (this takes a while)…`;
      },
    });
    if (answer.status !== 200) throw new Error(failure(answer.status, answer.json));
    return { tooLarge: [], skipped: 0 };
  }

  renderReport(result, local) {
    const bad = [...local.tooLarge, ...result.files.filter((f) => !f.usable)];
    const total = result.n_files + local.tooLarge.length;
    const heading = el(
      "h2",
      { id: "upload-report-heading", class: "upload-report__title", tabindex: "-1" },
      `Audio uploaded: ${result.n_usable} of ${total} ${total === 1 ? "file" : "files"} can be used`,
    );
    const nodes = [heading];
    if (local.skipped) {
      const others = local.skipped === 1 ? "other file (not audio) was" : "other files (not audio) were";
      nodes.push(el("p", { class: "muted small" }, `${local.skipped} ${others} left out.`));
    }
    if (bad.length) nodes.push(problemsTable(bad));
    this.report.replaceChildren(...nodes);
    this.report.hidden = false;
    heading.focus();
  }

  async upload() {
    const files = [...this.folder.files];
    const archive = this.zip.files[0];
    if (!files.length && !archive) {
      this.status.textContent = "Choose a folder or a zip of clips first.";
      this.folder.focus();
      return;
    }
    this.forget("");
    this.run = { current: {}, cancelled: false, token: null };
    this.setRunning(true);
    this.cancel.focus();
    this.status.textContent = "Uploading the audio…";
    try {
      const started = await request(this.url, { method: "POST", csrf: this.csrf });
      if (started.status !== 201) throw new Error(failure(started.status, started.data));
      this.run.token = started.data.token;
      const local = archive ? await this.sendZip(archive, {}) : await this.sendFolder(files, started.data, {});
      if (this.run.cancelled) throw new Cancelled("cancelled");
      const done = await request(`${this.url}/${this.run.token}/complete`, { method: "POST", csrf: this.csrf });
      if (done.status !== 200) throw new Error(failure(done.status, done.data));
      this.token = this.run.token;
      this.run = null;
      this.setRunning(false);
      this.status.textContent = `Upload complete: ${done.data.n_usable} clips can be used.`;
      this.renderReport(done.data, local);
      this.changed();
    } catch (error) {
      this.failed(error);
    }
  }

  failed(error) {
    const started = this.run?.token;
    this.run = null;
    this.setRunning(false);
    if (started) request(`${this.url}/${started}`, { method: "DELETE", csrf: this.csrf }).catch(() => {});
    this.status.textContent =
      error instanceof Cancelled
        ? "Upload cancelled: nothing of it will be used."
        : `The upload failed: ${String(error.message).replace(/\.?$/, ".")} Nothing of it will be used; upload again.`;
    this.button.focus();
  }

  stop() {
    if (!this.run) return;
    this.run.cancelled = true;
    this.run.current.xhr?.abort();
  }

  wire() {
    for (const radio of document.querySelectorAll("input[name=audio_source]")) {
      radio.addEventListener("change", () => this.showSource());
    }
    const chosen = (input, other) => () => {
      if (input.files.length) other.value = "";
      this.forget("The chosen audio has changed: upload it again.");
    };
    this.folder.addEventListener("change", chosen(this.folder, this.zip));
    this.zip.addEventListener("change", chosen(this.zip, this.folder));
    this.button.addEventListener("click", () => this.upload());
    this.cancel.addEventListener("click", () => this.stop());
    this.showSource();
  }
}

/**
 * Wire the upload part of the page. `csrf` is the session's token; `changed()` is called when
 * the upload the form would use changes. Returns {source, token, busy}: the chosen source
 * ("server" or "upload"), the complete upload's token (null until there is one), whether an
 * upload is running; null when the page has no upload part.
 */
export function setupAudioUpload(options) {
  const part = byId("audio-upload-part");
  if (!part) return null;
  const upload = new AudioUpload(part, options);
  upload.wire();
  return { source: () => upload.source(), token: () => upload.token, busy: () => upload.run !== null };
}
