// Reusing judgments from the organizer pages (docs/reuse.md):
//
// New-campaign page, "restore from an export bundle": the chosen zip is sent as it is to
// POST /api/campaigns/import-bundle; then the browser goes to the new campaign's management
// page. Management page, "add systems": the chosen run files are read here and sent by name
// to POST /api/campaigns/{slug}/runs; then the page reloads with its notice, unless the
// answer has warnings (run lists whose scores contradict their ranks), which are shown under
// the form with a link to the updated page. A refusal is shown above the form, in the API's
// words (file and line, or the member of the bundle).
// Every request carries the session's CSRF token (X-CSRF-Token, see lib.js).

import { renderWarnings } from "./campaign_preview.js";
import { $, $$, ApiError, api, el, readFile } from "./lib.js";

// restore a bundle: the zip as it is, the name and options in the query string
async function restore(form, options) {
  const bundle = $("[name=bundle]", form).files[0];
  if (!bundle) throw new Error("Choose the bundle (a .zip file).");
  const params = new URLSearchParams({ name: bundle.name });
  const slug = $("[name=slug]", form).value.trim();
  if (slug) params.set("slug", slug);
  const audio = $("[name=audio_dir]", form).value.trim();
  if (audio) params.set("audio_dir", audio);
  return api(`${form.dataset.url}?${params}`, { ...options, body: bundle, contentType: "application/zip" });
}

// add systems: the run files (and the metadata file, if any) read here and sent as JSON
async function addRuns(form, options) {
  const runs = [...$("[name=runs]", form).files];
  if (!runs.length) throw new Error("Choose the run files of the new systems.");
  const metadata = $("[name=metadata]", form).files[0];
  const audio = $("[name=audio_dir]", form).value.trim();
  const order = $("[name=order_by]", form).value;
  const [texts, meta] = await Promise.all([Promise.all(runs.map(readFile)), metadata ? readFile(metadata) : null]);
  const json = { runs: texts, metadata: meta, audio_dir: audio || null, order_by: order };
  return api(form.dataset.url, { ...options, json });
}

// added, with warnings: shown under the form, with the way to the updated page
function showWarnings(form, body) {
  const box = $("[data-reuse-warnings]", form);
  const added = body.systems.join(", ");
  const link = el("a", { href: form.dataset.done }, "Show the campaign with the new systems");
  const next = el("p");
  next.append(link);
  box.replaceChildren(
    renderWarnings(body.warnings, `Added ${added}; the scores of some lists contradict their ranks`),
    next,
  );
  box.hidden = false;
  link.focus();
}

async function submit(form) {
  const restoring = form.dataset.reuse === "restore";
  const error = $("[role=alert]", form);
  const status = $("[data-reuse-status]", form);
  const button = $("button[type=submit]", form);
  error.hidden = true;
  button.disabled = true;
  status.textContent = restoring ? "Checking and restoring…" : "Adding the systems…";
  const options = { method: "POST", csrf: form.dataset.csrf };
  try {
    const body = restoring ? await restore(form, options) : await addRuns(form, options);
    status.textContent = "Done.";
    if (!restoring && body.warnings?.length) {
      showWarnings(form, body);
      return;
    }
    window.location.assign(
      restoring ? `/campaigns/${encodeURIComponent(body.slug)}/manage?done=restored` : form.dataset.done,
    );
  } catch (problem) {
    status.textContent = "";
    button.disabled = false;
    error.textContent =
      problem instanceof ApiError && problem.status === 413
        ? "The files are larger than the server accepts."
        : problem.message;
    error.hidden = false;
    error.focus();
  }
}

for (const form of $$("form[data-reuse]")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(form);
  });
}
