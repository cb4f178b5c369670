// The new-campaign page's preview (templates/campaign_new.html): draws the answer of
// POST /api/campaigns/preview (the problems in the files, the collection's figures, how the
// clips are cut, the projected cost in judgments and volunteers' hours, the clips, the overlap
// of the systems).
// Imported by manage.js.

import { formatHours, formatHoursSpan } from "./hours.js";
import { el, formatInt } from "./lib.js";

/** "1 judgment", "1,234 judgments"; `many` for an irregular plural. */
export function plural(n, one, many = `${one}s`) {
  return `${formatInt(n)} ${n === 1 ? one : many}`;
}

function figure(list, label, value, sub) {
  const item = el("div", { class: "preview-figure" });
  item.append(el("dt", { class: "preview-figure__label" }, label), el("dd", { class: "preview-figure__value" }, value));
  if (sub) item.append(el("dd", { class: "preview-figure__sub" }, sub));
  list.append(item);
}

// one target of the projection: "about 1,200 judgments (900–1,500)"
function range(t) {
  if (t.reached) return "already reached";
  if (t.judgments_median === null) return "not reached within the pool in most simulated runs";
  let text = `about ${plural(t.judgments_median, "judgment")}`;
  if (t.judgments_low !== null && t.judgments_high !== null) {
    text += ` (${formatInt(t.judgments_low)}–${formatInt(t.judgments_high)})`;
  }
  return text;
}

// the volunteers' hours of one target: ", about 14.2 h of volunteers' time (9.5–22.0 h)"
function hours(t) {
  if (t.reached || t.hours === null || t.hours === undefined) return "";
  return `, about ${formatHours(t.hours)} of volunteers' time (${formatHoursSpan(t.hours_low, t.hours_high)})`;
}

// what the hours rest on: the stated defaults, nothing being measured yet
function hoursNote(basis) {
  const d = basis.defaults;
  const clips = {
    audio: `the clips' durations (${basis.pool.query_seconds.toFixed(0)} s queries and ${basis.pool.candidate_seconds.toFixed(0)} s candidates on average)`,
    excerpt: `${d.clip_seconds} s clips (the excerpts the campaign cuts)`,
    default: `${d.clip_seconds} s clips (their durations are read when the campaign is created)`,
  }[basis.durations];
  const repeats = basis.judgments_per_pair > 1 ? `, each pair judged ${basis.judgments_per_pair} times` : "";
  const trials = basis.quality_rate
    ? `, hidden quality trials on ${Math.round(100 * basis.quality_rate)} % of what is handed out`
    : "";
  return (
    `Hours from the defaults, nothing being measured yet: ${clips}, the whole query when it changes ` +
    `(one judgment in ${Math.round(1 / basis.query_change_share)}), the whole candidate, a ${d.decision_seconds} s decision` +
    `${repeats}${trials}; ${Math.round(100 * basis.level)} % intervals. Judging the whole pool once would take about ` +
    `${formatHours(basis.pool.hours)} (${formatHoursSpan(basis.pool.low, basis.pool.high)}). Once judging starts, ` +
    "the dashboard measures the campaign's own pace (docs/method.md §11)."
  );
}

// the median's share of the pool, as ", 55 % of the 538 pool pairs" (nothing when not reached)
function share(t, pool) {
  if (t.reached || t.judgments_median === null || !pool) return "";
  return `, ${Math.round((100 * t.judgments_median) / pool)} % of the ${formatInt(pool)} pool pairs`;
}

// the problems, each linked to its field (`form.field`) and shown under it (`form.fieldError`)
function renderProblems(problems, form) {
  const box = el("div", { class: "notice notice--error preview-problems", role: "alert" });
  box.append(el("h3", {}, `${plural(problems.length, "problem")} to fix before creating`));
  const list = el("ul", { class: "plain-list" });
  for (const p of problems) {
    let where = p.file || p.input;
    if (p.line !== null && p.line !== undefined) where += `, line ${p.line}`;
    if (p.field) where += ` (${p.field})`;
    const item = el("li");
    if (form.field(p.input)) {
      const link = el("a", { href: `#field-${p.input}` }, where);
      link.addEventListener("click", (event) => {
        event.preventDefault();
        form.field(p.input).focus();
      });
      item.append(link);
    } else {
      item.append(el("strong", {}, where));
    }
    item.append(`: ${p.message}`);
    list.append(item);
    form.fieldError(p.input, (p.line ? `Line ${p.line}: ` : "") + p.message);
  }
  box.append(list);
  return box;
}

// where a warning is: "S2.txt, line 7"; null for the summary and the count of the rest
function warningPlace(w) {
  if (!w.file) return null;
  return w.line !== null && w.line !== undefined ? `${w.file}, line ${w.line}` : w.file;
}

/**
 * The warnings (run lists whose scores contradict their ranks): the summary, then each list
 * by file and line, then how many more. They do not stop the campaign.
 */
export function renderWarnings(warnings, heading = "Warnings") {
  const box = el("div", { class: "notice notice--warn preview-warnings", role: "status" });
  box.append(el("h3", {}, heading));
  const list = el("ul", { class: "plain-list" });
  for (const w of warnings) {
    const place = warningPlace(w);
    if (place === null && !list.children.length) {
      box.append(el("p", {}, w.message));
      continue;
    }
    const item = el("li");
    if (place !== null) item.append(el("strong", {}, place), ": ");
    item.append(w.message);
    list.append(item);
  }
  if (list.children.length) box.append(list);
  return box;
}

function renderFigures(p) {
  const figures = el("dl", { class: "preview-figures" });
  figure(
    figures,
    "Systems",
    formatInt(p.systems.length),
    p.systems.slice(0, 12).join(", ") + (p.systems.length > 12 ? ", …" : ""),
  );
  figure(figures, "Queries", formatInt(p.n_queries), `${plural(p.n_documents, "document")} in all`);
  figure(
    figures,
    `Pool at k = ${p.k}`,
    plural(p.pool_pairs, "pair"),
    `to judge for a complete evaluation; ${plural(p.n_results, "retrieved result")}` +
      (p.n_filtered ? `, ${plural(p.n_filtered, "result")} left out (the query itself, same artist)` : ""),
  );
  const shared = p.pool_pairs ? 1 - (p.pairs_by_systems[0] || 0) / p.pool_pairs : 0;
  figure(
    figures,
    "Overlap",
    `${Math.round(shared * 100)} %`,
    `of the pool pairs are retrieved by two systems or more (pool / results = ${p.overlap_ratio.toFixed(2)})`,
  );
  if (p.judgments_given) {
    figure(
      figures,
      "Existing judgments",
      formatInt(p.judgments_in_pool),
      `in the pool on the campaign's scale, of ${plural(p.judgments_given, "judged pair")} given`,
    );
  }
  if (p.cut) {
    // how the clips would be cut, and how many documents the offsets name
    const named =
      p.clip_offsets === null || p.clip_offsets === undefined
        ? ""
        : `; ${plural(p.clip_offsets, "document")} named in the offsets file`;
    figure(figures, "Clips cut", p.clip_cut === "whole" ? "Whole files" : "Excerpts", `${p.cut}${named}`);
  }
  if (p.audio) {
    const { found, needed, missing, unreadable, unplayable_pairs } = p.audio;
    figure(
      figures,
      "Clips",
      `${formatInt(found)} of ${formatInt(needed)}`,
      missing || unreadable.length
        ? `${missing} missing, ${unreadable.length} unreadable: ${
            unplayable_pairs >= p.pool_pairs
              ? `none of the ${plural(p.pool_pairs, "pool pair")} can be played`
              : `${plural(unplayable_pairs, "pool pair")} cannot be played`
          }`
        : "every clip found and readable",
    );
  }
  return figures;
}

function renderProjection(p) {
  const projection = el("section", { class: "preview-projection", "aria-labelledby": "projection-heading" });
  projection.append(el("h3", { id: "projection-heading" }, "Judgments and hours to reach the target"));
  if (!p.projection) {
    projection.append(el("p", { class: "muted" }, p.projection_note || "No projection."));
    return projection;
  }
  const { target, others, runs, seconds, method } = p.projection;
  const lead = el("p", { class: "preview-projection__lead" });
  lead.append(
    el("strong", {}, range(target)),
    ` to reach a ranking confidence of ${target.target.toFixed(2)} (median, with the 10th–90th percentile range)` +
      `${share(target, p.pool_pairs)}${hours(target)}.`,
  );
  const list = el("ul", { class: "plain-list" });
  for (const t of others)
    list.append(el("li", {}, `Target ${t.target.toFixed(2)}: ${range(t)}${share(t, p.pool_pairs)}${hours(t)}`));
  const note = el(
    "p",
    { class: "muted small" },
    `Estimated by a quick simulated campaign (${runs} runs in ${seconds.toFixed(1)} s): the unjudged pairs get ` +
      "scores drawn from the chosen estimator's own distribution, and the simulation judges them in the order " +
      `the policy picks. Method: ${method}. A rough guide: in replays of past campaigns such projections came ` +
      "within about 10 % for a 0.99 target but were often off by half or more for 0.95 (docs/projection.md).",
  );
  projection.append(lead, list, note);
  if (p.projection.hours) projection.append(el("p", { class: "muted small" }, hoursNote(p.projection.hours)));
  return projection;
}

function renderAudio(audio) {
  const details = el("details", { class: "preview-details" });
  details.append(el("summary", {}, "Clips missing or unreadable"));
  const list = el("ul", { class: "plain-list" });
  for (const doc of audio.missing_examples) list.append(el("li", {}, `${doc}: no file`));
  for (const [doc, reason] of audio.unreadable) list.append(el("li", {}, `${doc}: ${reason}`));
  if (audio.missing > audio.missing_examples.length) {
    list.append(el("li", { class: "muted" }, `… and ${audio.missing - audio.missing_examples.length} more missing`));
  }
  details.append(list);
  return details;
}

function renderOverlap(overlap) {
  const details = el("details", { class: "preview-details" });
  details.append(el("summary", {}, "Overlap of every two systems"));
  const head = el("tr");
  ["Systems", "Shared pairs", "Share of their union"].forEach((label, i) => {
    head.append(el("th", i ? { class: "num", scope: "col" } : { scope: "col" }, label));
  });
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  for (const o of overlap) {
    const row = el("tr");
    row.append(
      el("th", { scope: "row" }, `${o.a} · ${o.b}`),
      el("td", { class: "num" }, formatInt(o.shared)),
      el("td", { class: "num" }, `${o.union ? Math.round((100 * o.shared) / o.union) : 0} %`),
    );
    tbody.append(row);
  }
  const table = el("table", { class: "data-table" });
  table.append(thead, tbody);
  const wrap = el("div", { class: "table-wrap" });
  wrap.append(table);
  details.append(wrap);
  return details;
}

/**
 * Draw the preview `p` in `body` (replacing what it showed). `form` gives the form's fields
 * (`field(name)`, or null) and marks a field invalid (`fieldError(name, message)`): each
 * problem links to its field and is repeated under it.
 */
export function renderPreview(body, p, form) {
  body.replaceChildren();
  if (p.problems.length) body.append(renderProblems(p.problems, form));
  if (p.warnings?.length) body.append(renderWarnings(p.warnings, "The scores of some lists contradict their ranks"));
  if (!p.systems.length) return;
  body.append(renderFigures(p), renderProjection(p));
  if (p.audio && (p.audio.missing_examples.length || p.audio.unreadable.length)) body.append(renderAudio(p.audio));
  if (p.overlap.length) body.append(renderOverlap(p.overlap));
  for (const note of p.notes) body.append(el("p", { class: "notice notice--warn" }, note));
}
