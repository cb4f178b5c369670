// Organizer pages that change a campaign (templates/campaign_new.html, campaign_manage.html).
//
// New campaign: the chosen files are read here and sent, with the settings, to the organizer
// API: POST /api/campaigns/preview (nothing is saved; campaign_preview.js draws the answer)
// and, once the preview is clean, POST /api/campaigns/import; then the browser goes to the
// campaign's management page. The choices of how clips are cut say the excerpt length typed
// (clip_cut.js), and the offsets file is asked for when clips start where it says. Management page: copy buttons for the links shown once.
// Every change carries the session's CSRF token (X-CSRF-Token, see lib.js).

import { setupAudioUpload } from "./audio_upload.js";
import { renderPreview } from "./campaign_preview.js";
import { cutLabels } from "./clip_cut.js";
import { $, $$, byId, el, errorDetail, readFile, request } from "./lib.js";

// ------------------------------------------------------------------ copy buttons

/** Copy `text`; without the clipboard API (plain http on another host), from a selected field. */
function copyText(text, input) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  return new Promise((resolve, reject) => {
    let field = input;
    if (!field) {
      field = el("textarea", { readonly: "", class: "visually-hidden" });
      field.value = text;
      document.body.append(field);
    }
    field.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    if (!input) field.remove();
    if (ok) resolve();
    else reject(new Error("copy refused"));
  });
}

function say(message) {
  const status = $("[data-copy-status]");
  if (status) status.textContent = message;
}

// a button copying the link in the field it names (data-copy="<input id>")
function copyOne(button) {
  const input = byId(button.dataset.copy);
  const name = byId(button.getAttribute("aria-describedby"));
  const who = name ? name.textContent : "the link";
  copyText(input.value, input).then(
    () => {
      button.textContent = "Copied";
      button.dataset.copied = "true";
      say(`The link of ${who} is copied.`);
    },
    () => {
      input.select();
      say("Copying is not allowed here: the link is selected, press Ctrl+C (⌘C).");
    },
  );
}

// a button copying every link its selector finds (data-copy-all="<selector>"), one per line
function copyAll(button) {
  const lines = $$(button.dataset.copyAll).map((input) => {
    const label = byId(input.getAttribute("aria-labelledby"));
    return (label ? `${label.textContent}\t` : "") + input.value;
  });
  copyText(lines.join("\n")).then(
    () => say(`${lines.length} links copied, one per line (name, tab, link).`),
    () => say("Copying is not allowed here: copy each link from its field."),
  );
}

function setupCopy() {
  for (const button of $$("[data-copy]")) button.addEventListener("click", () => copyOne(button));
  for (const button of $$("[data-copy-all]")) button.addEventListener("click", () => copyAll(button));
  byId("new-links")?.focus();
}

// ------------------------------------------------------------------ new campaign: the form

const INTEGERS = ["k", "lease_minutes", "judgments_per_pair", "seed"];
const DECIMALS = ["target", "listen_seconds", "quality_rate", "excerpt_seconds", "excerpt_start_fraction"];
const TEXTS = ["name", "slug", "description", "scale", "measure", "estimator", "policy", "order_by"];
const FILES = ["metadata", "judgments_fine", "judgments_broad"];

const form = byId("new-campaign");
let checked = false; // the preview matches the form as it is
// the organizer confirmed creating the campaign open although pairs cannot be played
let confirmUnplayable = false;
// the audio uploaded from this page (audio_upload.js)
let audioUpload = null;

const field = (name) => byId(`field-${name}`);

function clearErrors() {
  const formError = byId("form-error");
  formError.hidden = true;
  formError.textContent = "";
  for (const node of $$(".form__error", form)) {
    node.hidden = true;
    node.textContent = "";
  }
  for (const input of $$("[aria-invalid]", form)) {
    input.removeAttribute("aria-invalid");
    const ids = (input.getAttribute("aria-describedby") || "").split(" ");
    input.setAttribute("aria-describedby", ids.filter((id) => id && !id.startsWith("error-")).join(" "));
  }
}

/** A message under the field, linked to it (aria-describedby) and announced; false if no such field. */
function fieldError(name, message) {
  const input = field(name);
  const node = byId(`error-${name}`);
  if (!input || !node) return false;
  node.textContent = node.textContent ? `${node.textContent} ${message}` : message;
  node.hidden = false;
  input.setAttribute("aria-invalid", "true");
  const ids = (input.getAttribute("aria-describedby") || "").split(" ");
  if (!ids.includes(`error-${name}`)) ids.push(`error-${name}`);
  input.setAttribute("aria-describedby", ids.join(" ").trim());
  return true;
}

function showFormError(message, focusField = null) {
  const formError = byId("form-error");
  formError.textContent = message;
  formError.hidden = false;
  ((focusField ? field(focusField) : null) || formError).focus();
}

/** The request body: settings and files (read now, so a file changed on disk is read again). */
async function payload() {
  const data = {};
  for (const name of TEXTS) {
    const value = field(name).value.trim();
    if (value !== "" || name === "name") data[name] = value;
  }
  for (const name of INTEGERS) {
    const value = field(name).value.trim();
    if (value !== "") data[name] = /^-?\d+$/.test(value) ? Number(value) : value;
  }
  for (const name of DECIMALS) {
    const value = field(name).value.trim();
    if (value !== "") data[name] = Number.isNaN(Number(value)) ? value : Number(value);
  }
  data.keep_collecting = field("keep_collecting").checked;
  data.auto_pause = field("auto_pause").checked;
  data.status = field("open").checked ? "open" : "draft";
  if (confirmUnplayable) data.confirm_unplayable = true;
  data.clip_cut = clipCut();
  if (audioUpload?.source() === "upload") {
    if (audioUpload.token()) data.audio_upload = audioUpload.token();
  } else {
    const audio = field("audio_dir").value.trim();
    if (audio !== "") data.audio_dir = audio;
  }

  const runs = [...field("runs").files];
  // the offsets file goes with its choice only (the server refuses it with another)
  const names = data.clip_cut === "offsets" ? [...FILES, "clip_offsets"] : FILES;
  const others = names.map((name) => [name, field(name).files[0]]).filter(([, file]) => file);
  const size = [...runs, ...others.map(([, file]) => file)].reduce((sum, file) => sum + file.size, 0);
  const maxBytes = Number(form.dataset.maxBytes) || Number.POSITIVE_INFINITY;
  if (size > maxBytes) {
    throw new Error(
      `The files are too large to send together (${Math.round(size / 1048576)} MiB; at most ` +
        `${Math.round(maxBytes / 1048576)} MiB): use mtcjudge campaign create on the server.`,
    );
  }
  const [texts, ...read] = await Promise.all([
    Promise.all(runs.map(readFile)),
    ...others.map(([, file]) => readFile(file)),
  ]);
  data.runs = texts;
  others.forEach(([name], i) => {
    data[name] = read[i];
  });
  return data;
}

/** POST `data` as JSON; resolves to {status, json} whatever the status (json never null). */
async function send(url, data) {
  const { status, data: json } = await request(url, { method: "POST", json: data, csrf: form.dataset.csrf });
  return { status, json: json ?? { error: "http_error", detail: `The server answered ${status}.` } };
}

// "k: Input should be ...; target: ..." (a malformed request's 422) -> under each field
function malformed(detail) {
  let placed = false;
  for (const part of String(detail || "").split("; ")) {
    const match = /^([a-z_]+)(?:\.[^:]*)?: (.*)$/.exec(part);
    if (match && fieldError(match[1], match[2])) placed = true;
  }
  return placed;
}

function failed({ status, json }) {
  const detail = errorDetail(json);
  if (status === 401) {
    showFormError("Your session has ended: sign in again (in another tab, to keep this form), then retry.");
  } else if (status === 403) {
    showFormError("The page is out of date: reload it and try again.");
  } else if (status === 422 && malformed(detail)) {
    showFormError("Some settings are not valid: see the messages under the fields.");
    $("[aria-invalid=true]", form)?.focus();
  } else {
    const message = detail || `The server answered ${status}.`;
    // "target must be ...", "slug 'x' is already taken", "clip_offsets: ...": also under the field
    const named = /^([a-z_]+):? /.exec(message);
    showFormError(message, named && fieldError(named[1], message) ? named[1] : null);
  }
}

function setBusy(on, message) {
  byId("preview-button").disabled = on;
  byId("create-button").disabled = on || !checked;
  byId("busy").textContent = message || "";
  form.setAttribute("aria-busy", on ? "true" : "false");
}

// the form no longer matches its preview: creating waits for another check
function unchecked(message) {
  if (confirmUnplayable) {
    confirmUnplayable = false;
    byId("create-button").textContent = "Create the campaign";
  }
  if (!checked) return;
  checked = false;
  byId("create-button").disabled = true;
  byId("create-status").textContent = message;
}

// ------------------------------------------------------------------ new campaign: the cut

const clipCut = () => $("input[name=clip_cut]:checked", form)?.value || "excerpt";

// the choices say the excerpt length and start typed; the offsets file shows with its choice
function showCut() {
  const seconds = field("excerpt_seconds");
  const labels = cutLabels(seconds.value, field("excerpt_start_fraction").value, {
    min: Number(seconds.min),
    max: Number(seconds.max),
  });
  byId("clip_cut-excerpt-words").textContent = labels.excerpt;
  byId("clip_cut-offsets-words").textContent = labels.offsets;
  byId("clip-offsets-part").hidden = clipCut() !== "offsets";
}

function setupCut() {
  for (const name of ["excerpt_seconds", "excerpt_start_fraction"]) field(name).addEventListener("input", showCut);
  for (const radio of $$("input[name=clip_cut]", form)) radio.addEventListener("change", showCut);
  showCut();
}

// ------------------------------------------------------------------ new campaign: check, create

/** Whether the chosen audio is ready to be used; else says what to do first. */
function audioReady() {
  if (audioUpload?.source() !== "upload" || audioUpload.token()) return true;
  const button = byId("upload-button");
  showFormError(
    audioUpload.busy()
      ? "The audio is still uploading: wait for it to finish."
      : "Upload the audio first (the “Upload the audio” button), or choose a folder on the server.",
  );
  if (!audioUpload.busy()) button.focus();
  return false;
}

async function check() {
  clearErrors();
  if (!field("runs").files.length) {
    fieldError("runs", "Choose at least one run file.");
    showFormError("Choose the run files first.", "runs");
    return;
  }
  if (!audioReady()) return;
  setBusy(true, "Checking the files and simulating the campaign (a few seconds)…");
  let result;
  try {
    result = await send(form.dataset.previewUrl, await payload());
  } catch (error) {
    setBusy(false, "");
    showFormError(error.message || "The files could not be read.");
    return;
  }
  const preview = result.status === 200 ? result.json : result.json.preview;
  if (!preview) {
    setBusy(false, "");
    failed(result);
    return;
  }
  checked = result.status === 200 && preview.ok;
  renderPreview(byId("preview-body"), preview, { field, fieldError });
  const section = byId("preview");
  section.hidden = false;
  byId("create-status").textContent = checked ? "" : "Fix the problems above, then check again.";
  setBusy(false, checked ? "Checked: see the preview below." : "Problems found: see the preview below.");
  section.focus();
}

async function create() {
  clearErrors();
  if (!field("name").value.trim()) {
    fieldError("name", "Give the campaign a name.");
    showFormError("The campaign needs a name.", "name");
    return;
  }
  if (!audioReady()) return;
  const status = byId("create-status");
  setBusy(true, "");
  status.textContent = "Creating the campaign…";
  let result;
  try {
    result = await send(form.dataset.importUrl, await payload());
  } catch (error) {
    setBusy(false, "");
    status.textContent = "";
    showFormError(error.message || "The files could not be read.");
    return;
  }
  if (result.status === 201) {
    status.textContent = "Created. Opening its management page…";
    window.location.assign(`/campaigns/${encodeURIComponent(result.json.slug)}/manage?done=created`);
    return;
  }
  setBusy(false, "");
  status.textContent = "";
  if (result.status === 409 && result.json.error === "unplayable_pairs") {
    // created open with pairs that cannot be played: the next press confirms it
    confirmUnplayable = true;
    byId("create-button").textContent = "Create and open anyway";
    showFormError(`${errorDetail(result.json)} Press “Create and open anyway” to confirm, or untick “Open”.`);
    return;
  }
  failed(result);
}

function setupNewCampaign() {
  form.addEventListener("input", () => unchecked("The form has changed: check the files again before creating."));
  form.addEventListener("change", (event) => {
    if (event.target.type === "file") unchecked("The files have changed: check them again before creating.");
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    check();
  });
  byId("create-button").addEventListener("click", create);
  setupCut();
  audioUpload = setupAudioUpload({
    csrf: form.dataset.csrf,
    changed: () => unchecked("The audio has changed: check the files again before creating."),
  });
}

setupCopy();
if (form) setupNewCampaign();
