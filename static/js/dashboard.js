/* The organizer's live dashboard of a campaign: draws the results document
   (GET /api/campaigns/{slug}/results) as SVG and keeps it current from the Server-Sent
   Events stream (GET /api/campaigns/{slug}/events). No library, no build step; every
   picture has a table beside it for screen readers and for copying numbers. */

import { formatHours, formatHoursSpan } from "./hours.js";
import { $, $$, byId, el, errorDetail, formatInt, request } from "./lib.js";

const root = byId("dashboard");
const SVG = "http://www.w3.org/2000/svg";
const resultsUrl = root.dataset.resultsUrl;
const eventsUrl = root.dataset.eventsUrl;
const IDLE_LEASE_MINUTES = 15; // a live lease with no judgment for this long is "idle"
const FAST_SECONDS = 8; // a median under this per judgment is faster than listening allows

const state = {
  driving: null, // the results document of the campaign's own measure and scale
  shown: null, // what the charts show (the driving one, or another measure)
  measure: root.dataset.measure,
  scale: root.dataset.scale,
  seen: [], // [time ms, judgments] of the documents received, for the judging rate
};

// ------------------------------------------------------------------ helpers

// "MIREX nDCG" / "trec_eval nDCG": the titles the page's measure picker carries
function measureTitle(measure) {
  const option = $(`#measure option[value="${measure}"]`);
  return option ? option.dataset.title : measure;
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function titled(node, text) {
  node.appendChild(svgEl("title", {}, text));
  return node;
}

const fmt = {
  int: formatInt,
  pct: (x, digits = 1) => (x === null || x === undefined ? "—" : `${(100 * x).toFixed(digits)} %`),
  num: (x, digits = 3) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits)),
  ago(iso) {
    if (!iso) return "never";
    const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (seconds < 60) return `${Math.round(seconds)} s ago`;
    if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
    if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h ago`;
    return `${(seconds / 86400).toFixed(1)} days ago`;
  },
};

// charts are drawn at the size they are shown, so that their text is the page's size
function boxWidth(id) {
  return Math.max(360, Math.floor(byId(id).clientWidth || 720));
}

// "3." or, for a system tied with another (they share the rank), "3="
function rankLabel(s) {
  return `${s.rank}${s.tied ? "=" : "."}`;
}

// every score exact: every pair the scores depend on judged, no interval left
function exact(doc) {
  return doc.systems.length > 0 && doc.systems.every((s) => s.var === 0);
}

function niceTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const step0 = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= step0);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-12; t += step) ticks.push(+t.toFixed(10));
  return ticks;
}

// ------------------------------------------------------------------ summary

// What the confidence assumes of the assessors (docs/method.md §10).
function disagreementText(doc) {
  const d = doc.assessor_disagreement;
  if (!d) return "";
  if (!d.measured) {
    return d.pairs
      ? `assessor disagreement: ${d.pairs} pair(s) judged twice so far, 3 needed; assumed none meanwhile`
      : "assessor disagreement not measured yet: assumed none";
  }
  const unit = doc.scale === "fine" ? "FINE points" : "BROAD grades";
  const sd = doc.scale === "fine" ? d.sd.toFixed(1) : d.sd.toFixed(2);
  return `includes assessor disagreement (sd ${sd} ${unit}, ${fmt.int(d.pairs)} pairs judged twice)`;
}

function renderSummary(doc) {
  const unplayable = doc.pool_pairs - doc.playable_pairs;
  byId("fig-judgments").textContent = fmt.int(doc.judgments);
  byId("fig-judgments-of").textContent =
    `of ${fmt.int(doc.playable_pairs)} pairs (${fmt.pct(doc.judgments / Math.max(1, doc.playable_pairs))})`;
  byId("fig-confidence").textContent = fmt.pct(doc.ranking_confidence);
  byId("fig-confidence-of").textContent = `target ${fmt.pct(doc.target, 0)}`;
  byId("fig-disagreement").textContent = disagreementText(doc);
  byId("fig-settled").textContent = `${fmt.int(doc.system_pairs_settled)} of ${fmt.int(doc.system_pairs)}`;
  const tiedNote = doc.system_pairs_tied ? `; ${fmt.int(doc.system_pairs_tied)} of them tied` : "";
  byId("fig-settled-of").textContent = `at the target confidence${tiedNote}`;
  const p = doc.projected_judgments_to_target;
  if (doc.can_stop) {
    byId("fig-projection").textContent = "0";
    byId("fig-projection-of").textContent = "the target is met";
  } else if (p && p.median !== null) {
    byId("fig-projection").textContent = `≈ ${fmt.int(p.median)}`;
    byId("fig-projection-of").textContent =
      `more judgments (simulations: ${fmt.int(p.low)}–${fmt.int(p.high)}; a rough guide)`;
  } else {
    byId("fig-projection").textContent = "—";
    byId("fig-projection-of").textContent = p
      ? "not reached within the pool in most simulations"
      : "projection not computed yet";
  }
  const banner = byId("stop-banner");
  banner.hidden = !doc.can_stop;
  if (doc.can_stop) {
    const why = {
      complete: `Every pool pair is judged (${fmt.int(doc.judgments)} pairs): the ranking is exact for these judgments, and nothing is left for MTC to choose.`,
      absolute: `The stopping rule is met (absolute): every system's score is known within the campaign's error after ${fmt.int(doc.judgments)} judgments.`,
    };
    byId("stop-banner-text").textContent =
      (why[doc.stop_reason] ||
        `The stopping rule is met (${doc.stop_reason || "confidence"}): the ranking confidence is ${fmt.pct(doc.ranking_confidence)}, at least the target ${fmt.pct(doc.target, 0)}, after ${fmt.int(doc.judgments)} judgments.`) +
      " You can close the campaign; assessors are told they are done unless it keeps collecting.";
  }
  byId("updated").textContent = doc.computed_at
    ? `Computed ${new Date(doc.computed_at).toLocaleString()} (version ${doc.version})`
    : "Not computed yet: the planner is starting";
  renderWarnings(doc, unplayable);
  renderRate(doc);
  renderHours(doc);
}

// ------------------------------------------------------------------ volunteers' hours

// the listening section's hours to one target, as a table cell says them
function targetHours(t) {
  if (!t) return "—";
  if (t.reached) return "reached";
  if (t.hours === null) return "not within the pool";
  return `≈ ${formatHours(t.hours)} (${formatHoursSpan(t.low, t.high)})`;
}

function ownTarget(doc) {
  return (doc.listening?.targets || []).find((t) => Math.abs(t.target - doc.target) < 1e-9);
}

/** The volunteers' time (docs/method.md §11): spent so far, and still needed to the target. */
function renderHours(doc) {
  const listening = doc.listening;
  if (!listening) return;
  const spent = listening.spent;
  byId("fig-hours").textContent = formatHours(spent.hours);
  byId("fig-hours-of").textContent =
    `${formatHours(spent.listening_hours)} of it listening, over ${plural(spent.judgments, "judgment")}`;
  const own = ownTarget(doc);
  let next = "";
  if (!doc.can_stop && own && !own.reached) {
    next =
      own.hours === null
        ? "the target is not within the pool in most simulations"
        : `≈ ${formatHours(own.hours)} more to reach the target (${formatHoursSpan(own.low, own.high)})`;
  }
  byId("fig-hours-to-target").textContent = next;
  byId("hours-method").textContent = hoursMethod(listening);
}

/** What the hours rest on, in words. */
function hoursMethod(listening) {
  const d = listening.defaults;
  const pool = listening.pool;
  const measured = listening.parameters.judgments;
  const trials = listening.quality_rate
    ? ` and the hidden trials (${fmt.pct(listening.quality_rate, 0)} of hand-outs)`
    : "";
  return (
    `Volunteers' hours, with ${Math.round(100 * listening.level)} % intervals: from the listening time ` +
    `measured on ${plural(measured, "judgment")} so far, shrunk toward the defaults (${d.clip_seconds} s clips ` +
    `when their duration is unknown, the whole query when it changes, the whole candidate, a ${d.decision_seconds} s ` +
    `decision). Each judged pair counts ${plural(listening.judgments_per_pair, "judgment")}${trials}; ` +
    `${fmt.pct(listening.query_changes.share, 0)} of judgments change query; clips last ` +
    `${pool.query_seconds.toFixed(0)} s (queries) and ${pool.candidate_seconds.toFixed(0)} s (candidates) on average. ` +
    `Judging the whole pool once (${fmt.int(pool.pairs)} pairs, each of the ${fmt.int(pool.queries)} queries heard once) ` +
    `would take about ${formatHours(pool.hours)} (${formatHoursSpan(pool.low, pool.high)}).`
  );
}

function renderRate(doc) {
  const now = Date.now();
  const seen = state.seen;
  if (!seen.length || seen[seen.length - 1][1] !== doc.judgments) seen.push([now, doc.judgments]);
  while (seen.length > 2 && now - seen[0][0] > 10 * 60 * 1000) seen.shift();
  const first = seen[0];
  const minutes = (now - first[0]) / 60000;
  byId("fig-rate").textContent =
    seen.length < 2 || minutes < 0.1 ? "—" : ((doc.judgments - first[1]) / minutes).toFixed(1);
}

function renderWarnings(doc, unplayable) {
  const items = [];
  if (unplayable > 0) {
    const clips = doc.unplayable_clips || [];
    const named = clips.length
      ? ` No readable audio for ${clips.slice(0, 8).join(", ")}${clips.length > 8 ? `, … (${clips.length} clips)` : ""}.`
      : "";
    items.push(
      unplayable >= doc.pool_pairs
        ? `No pair can be judged: none of the ${fmt.int(doc.pool_pairs)} pool pairs has two playable clips, so assessors are given nothing.${named}`
        : `${fmt.int(unplayable)} of ${fmt.int(doc.pool_pairs)} pairs cannot be judged and are never handed out: a clip is missing or unreadable.${named}`,
    );
  }
  for (const a of doc.assessors || []) {
    if (a.live_lease && a.last_active && Date.now() - Date.parse(a.last_active) > IDLE_LEASE_MINUTES * 60000) {
      items.push(`${a.pseudonym} holds a pair but has not judged for ${fmt.ago(a.last_active).replace(" ago", "")}.`);
    }
    if (a.judged >= 5 && a.median_seconds_per_judgment !== null && a.median_seconds_per_judgment < FAST_SECONDS) {
      items.push(
        a.pseudonym +
          " judges in " +
          a.median_seconds_per_judgment.toFixed(1) +
          " s per pair (median): faster than listening to two clips allows.",
      );
    }
  }
  const list = byId("warnings-list");
  list.replaceChildren(...items.map((text) => el("li", {}, text)));
  byId("warnings").hidden = items.length === 0;
}

// ------------------------------------------------------------------ forest plot

function renderForest(doc) {
  const systems = [...doc.systems].sort((a, b) => a.rank - b.rank);
  const rowH = 22,
    left = 150,
    right = 24,
    top = 26,
    bottom = 34,
    width = boxWidth("forest");
  const height = top + bottom + rowH * Math.max(1, systems.length);
  const lo = Math.min(...systems.map((s) => s.ci_low), ...systems.map((s) => s.mean));
  const hi = Math.max(...systems.map((s) => s.ci_high), ...systems.map((s) => s.mean));
  const pad = (hi - lo) * 0.05 || 0.05;
  const x0 = lo - pad,
    x1 = hi + pad;
  const x = (v) => left + ((v - x0) / (x1 - x0)) * (width - left - right);
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart",
    role: "img",
    "aria-labelledby": "forest-heading forest-desc",
  });
  for (const t of niceTicks(x0, x1, 6)) {
    svg.appendChild(svgEl("line", { x1: x(t), x2: x(t), y1: top - 6, y2: height - bottom, class: "grid" }));
    svg.appendChild(
      svgEl("text", { x: x(t), y: height - bottom + 18, class: "tick", "text-anchor": "middle" }, fmt.num(t, 2)),
    );
  }
  svg.appendChild(
    svgEl(
      "text",
      { x: (left + width - right) / 2, y: height - 4, class: "axis-label", "text-anchor": "middle" },
      `${measureTitle(doc.measure)}@${doc.k} (${doc.scale}), ${exact(doc) ? "exact score" : "estimate and interval"}`,
    ),
  );
  systems.forEach((s, i) => {
    const y = top + rowH * i + rowH / 2;
    const g = titled(
      svgEl("g", { class: "forest-row" }),
      `${rankLabel(s)} ${s.name}: ${fmt.num(s.mean)} (${fmt.num(s.ci_low)} to ${fmt.num(s.ci_high)})` +
        (s.tied ? "; tied: its score is known to equal another system's" : ""),
    );
    g.appendChild(
      svgEl("text", { x: left - 10, y: y + 4, class: "label", "text-anchor": "end" }, `${rankLabel(s)} ${s.name}`),
    );
    g.appendChild(svgEl("line", { x1: x(s.ci_low), x2: x(s.ci_high), y1: y, y2: y, class: "ci" }));
    g.appendChild(svgEl("circle", { cx: x(s.mean), cy: y, r: 4.5, class: "point" }));
    svg.appendChild(g);
  });
  byId("forest").replaceChildren(svg);
  const exactScores = exact(doc);
  const rows = systems.map((s) => {
    const tr = el("tr");
    tr.appendChild(el("td", { class: "num" }, s.tied ? `${s.rank}=` : String(s.rank)));
    tr.appendChild(el("th", { scope: "row" }, s.name));
    tr.appendChild(el("td", { class: "num" }, fmt.num(s.mean)));
    tr.appendChild(
      el("td", { class: "num" }, exactScores ? "none (exact)" : `${fmt.num(s.ci_low)} – ${fmt.num(s.ci_high)}`),
    );
    tr.appendChild(el("td", { class: "num" }, fmt.num(Math.sqrt(s.var), 4)));
    return tr;
  });
  byId("systems-body").replaceChildren(...rows);
  const unjudged = doc.pool_pairs - doc.judgments;
  let desc;
  if (exact(doc)) {
    desc =
      (unjudged <= 0 ? "Every pool pair is judged: each" : "Every pair the scores depend on is judged: each") +
      " score is exact for these queries and judgments, and its interval has no width (an interval never includes the spread over queries).";
  } else {
    desc = `Each system's estimated score with its 95 % interval, best first. The ${fmt.int(unjudged)} pairs not judged yet enter by what the ${doc.estimator} estimator expects of them; the interval is the uncertainty that leaves (within 0 to 1), not the spread over queries, and it shrinks as judgments arrive.`;
  }
  if (systems.some((s) => s.tied))
    desc += " = marks tied systems: their scores are known to be equal, and they share a rank.";
  byId("forest-desc").textContent = desc;
}

// ------------------------------------------------------------------ heat map

function renderHeatmap(doc) {
  const systems = [...doc.systems].sort((a, b) => a.rank - b.rank);
  const index = new Map(systems.map((s, i) => [s.name, i]));
  const n = systems.length;
  const longest = Math.max(1, ...systems.map((s) => s.name.length));
  const size = Math.max(6, Math.min(28, Math.floor(560 / Math.max(1, n))));
  const label = size >= 10 ? Math.min(140, 10 + 6.5 * longest) : 8; // names drawn when they fit
  const top = size >= 10 ? Math.min(130, 10 + 5.8 * longest) : 8; // rotated names above
  const width = label + size * n + 8,
    height = top + size * n + 8;
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart heatmap",
    role: "img",
    "aria-labelledby": "heatmap-heading heatmap-desc",
  });
  svg.style.maxWidth = `${Math.max(width, 320)}px`; // CSSOM: the CSP allows no style attribute
  if (size >= 10) drawHeatmapNames(svg, systems, { label, top, size });
  const target = doc.target;
  for (const p of doc.pairs) {
    const i = index.get(p.a),
      j = index.get(p.b);
    if (i === undefined || j === undefined) continue;
    const settled = p.confidence >= target;
    // uncertain pairs: darker the closer to a coin toss
    let cls = settled ? "cell settled" : p.confidence >= (0.5 + target) / 2 ? "cell close" : "cell uncertain";
    const better = p.diff_mean >= 0 ? p.a : p.b;
    let text =
      `${p.a} vs ${p.b}: ${better} ahead with confidence ${fmt.pct(p.confidence)}` +
      (settled ? " (settled)" : " (uncertain)") +
      (p.verdict ? `; ${p.verdict}` : "");
    if (p.tied) {
      cls = "cell tied";
      text = `${p.a} and ${p.b} are tied: their scores are known to be equal, no order is claimed (settled)`;
    }
    for (const [r, c] of [
      [i, j],
      [j, i],
    ]) {
      svg.appendChild(
        titled(
          svgEl("rect", {
            x: label + size * c,
            y: top + size * r,
            width: size - 1,
            height: size - 1,
            class: cls,
          }),
          text,
        ),
      );
      if (p.tied && size >= 10) {
        svg.appendChild(
          svgEl(
            "text",
            {
              x: label + size * c + size / 2,
              y: top + size * r + size * 0.7,
              class: "tie-mark",
              "text-anchor": "middle",
            },
            "=",
          ),
        );
      }
    }
  }
  for (let i = 0; i < n; i++) {
    svg.appendChild(
      svgEl("rect", {
        x: label + size * i,
        y: top + size * i,
        width: size - 1,
        height: size - 1,
        class: "cell diagonal",
      }),
    );
  }
  byId("heatmap").replaceChildren(svg);
  byId("heatmap-count").textContent =
    `${fmt.int(doc.system_pairs_settled)} of ${fmt.int(doc.system_pairs)} system pairs settled at ${fmt.pct(target, 0)}` +
    (doc.system_pairs_tied ? ` (${fmt.int(doc.system_pairs_tied)} of them tied)` : "");
  byId("heatmap-tied-key").hidden = !doc.system_pairs_tied;
  renderUnsettledPairs(doc);
}

/** The systems' names left of the heat map's rows and, rotated, above its columns. */
function drawHeatmapNames(svg, systems, { label, top, size }) {
  systems.forEach((s, i) => {
    svg.appendChild(
      svgEl(
        "text",
        { x: label - 6, y: top + size * i + size * 0.7, class: "label small", "text-anchor": "end" },
        s.name,
      ),
    );
    svg.appendChild(
      svgEl(
        "text",
        {
          x: 0,
          y: 0,
          class: "label small",
          "text-anchor": "start",
          transform: `translate(${label + size * i + size * 0.7},${top - 6}) rotate(-60)`,
        },
        s.name,
      ),
    );
  });
}

/** The table under the heat map: the least certain of the unsettled pairs. */
function renderUnsettledPairs(doc) {
  const target = doc.target;
  const uncertain = doc.pairs.filter((p) => p.confidence < target).sort((a, b) => a.confidence - b.confidence);
  const rows = uncertain.slice(0, 50).map((p) => {
    const tr = el("tr");
    tr.appendChild(el("th", { scope: "row" }, `${p.a} – ${p.b}`));
    tr.appendChild(el("td", { class: "num" }, fmt.num(p.diff_mean, 4)));
    tr.appendChild(el("td", { class: "num" }, fmt.pct(p.confidence)));
    tr.appendChild(el("td", {}, p.verdict || ""));
    return tr;
  });
  if (!rows.length) {
    const tr = el("tr");
    tr.appendChild(el("td", { colspan: "4" }, "Every system pair is settled at the target."));
    rows.push(tr);
  }
  byId("pairs-body").replaceChildren(...rows);
  byId("pairs-caption").textContent =
    uncertain.length > 50
      ? `The 50 least certain of ${uncertain.length} unsettled pairs`
      : `Unsettled pairs (${uncertain.length})`;
}

// ------------------------------------------------------------------ confidence curve

function renderCurve(doc) {
  const points = (doc.trajectory || []).map((t) => [t.judgments, t.ranking_confidence]);
  const p = doc.projected_judgments_to_target;
  const width = boxWidth("curve"),
    height = 300,
    left = 56,
    right = 20,
    top = 16,
    bottom = 42;
  const projectedEnd = p && p.high !== null && !doc.can_stop ? doc.judgments + p.high : 0;
  const xMax = Math.max(10, doc.judgments, projectedEnd, ...points.map((q) => q[0])) * 1.04;
  const yMin = Math.min(0.5, ...points.map((q) => q[1]));
  const x = (v) => left + (v / xMax) * (width - left - right);
  const y = (v) => top + (1 - (v - yMin) / (1 - yMin)) * (height - top - bottom);
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart",
    role: "img",
    "aria-labelledby": "curve-heading curve-desc",
  });
  for (const t of niceTicks(yMin, 1, 5)) {
    svg.appendChild(svgEl("line", { x1: left, x2: width - right, y1: y(t), y2: y(t), class: "grid" }));
    svg.appendChild(svgEl("text", { x: left - 8, y: y(t) + 4, class: "tick", "text-anchor": "end" }, fmt.pct(t, 0)));
  }
  for (const t of niceTicks(0, xMax, 6)) {
    svg.appendChild(
      svgEl(
        "text",
        { x: x(t), y: height - bottom + 18, class: "tick", "text-anchor": "middle" },
        fmt.int(Math.round(t)),
      ),
    );
  }
  svg.appendChild(
    svgEl(
      "text",
      { x: (left + width - right) / 2, y: height - 6, class: "axis-label", "text-anchor": "middle" },
      "judged pairs",
    ),
  );
  if (p && p.median !== null && !doc.can_stop) {
    const band = titled(
      svgEl("rect", {
        x: x(doc.judgments + p.low),
        y: top,
        width: Math.max(1, x(doc.judgments + p.high) - x(doc.judgments + p.low)),
        height: height - top - bottom,
        class: "projection-band",
      }),
      `projected to reach the target after ${fmt.int(doc.judgments + p.median)} judged pairs (simulations: ${fmt.int(doc.judgments + p.low)}–${fmt.int(doc.judgments + p.high)})`,
    );
    svg.appendChild(band);
    svg.appendChild(
      svgEl("line", {
        x1: x(doc.judgments + p.median),
        x2: x(doc.judgments + p.median),
        y1: top,
        y2: height - bottom,
        class: "projection-line",
      }),
    );
  }
  svg.appendChild(
    titled(
      svgEl("line", { x1: left, x2: width - right, y1: y(doc.target), y2: y(doc.target), class: "target-line" }),
      `target ${fmt.pct(doc.target, 0)}`,
    ),
  );
  svg.appendChild(
    svgEl(
      "text",
      { x: width - right - 4, y: y(doc.target) - 6, class: "tick target-label", "text-anchor": "end" },
      `target ${fmt.pct(doc.target, 0)}`,
    ),
  );
  if (points.length) {
    const d = points.map((q, i) => `${i ? "L" : "M"}${x(q[0]).toFixed(1)} ${y(q[1]).toFixed(1)}`).join(" ");
    svg.appendChild(svgEl("path", { d, class: "curve" }));
    const last = points[points.length - 1];
    svg.appendChild(
      titled(
        svgEl("circle", { cx: x(last[0]), cy: y(last[1]), r: 4, class: "point" }),
        `now: ${fmt.pct(last[1])} after ${fmt.int(last[0])}`,
      ),
    );
  }
  byId("curve").replaceChildren(svg);
  renderProjections(doc);
}

/** The table under the curve: the judgments each target would still cost, and how that is projected. */
function renderProjections(doc) {
  const hours = new Map((doc.listening?.targets || []).map((t) => [t.target, t]));
  const costs = (doc.projections || []).map((t) => {
    const tr = el("tr");
    tr.appendChild(
      el(
        "th",
        { scope: "row" },
        fmt.pct(t.target, 0) + (Math.abs(t.target - doc.target) < 1e-9 ? " (this campaign's)" : ""),
      ),
    );
    let text;
    if (t.reached) text = "reached";
    else if (t.median === null) text = "not within the pool";
    else text = `≈ ${fmt.int(t.median)} more (${fmt.int(t.low)}–${fmt.int(t.high)})`;
    tr.appendChild(el("td", { class: "num" }, text));
    let then = "—";
    if (t.median !== null && !t.reached) {
      const total = doc.judgments + t.median;
      then = doc.pool_pairs ? `${fmt.int(total)} (${fmt.pct(total / doc.pool_pairs, 0)} of the pool)` : fmt.int(total);
    }
    tr.appendChild(el("td", { class: "num" }, then));
    tr.appendChild(el("td", { class: "num" }, targetHours(hours.get(t.target))));
    return tr;
  });
  byId("costs-body").replaceChildren(...costs);
  byId("projection-method").textContent = doc.projection
    ? `Projection from ${doc.projection.runs} simulated continuations at ${fmt.int(doc.projection.judgments)} judgments: ${doc.projection.method}`
    : "";
}

// ------------------------------------------------------------------ assessors

function reliabilityCell(a) {
  const r = a.reliability || { assessed: false, flagged: false, reasons: [] };
  const td = el("td");
  if (!r.assessed) {
    td.appendChild(el("span", { class: "reliability reliability--unknown" }, "Not assessed yet"));
  } else if (r.flagged) {
    const flag = el("span", { class: "reliability reliability--flagged" });
    flag.appendChild(el("span", { "aria-hidden": "true" }, "⚠ "));
    flag.appendChild(document.createTextNode("Flagged"));
    td.appendChild(flag);
    const list = el("ul", { class: "reliability__reasons" });
    for (const reason of r.reasons.length ? r.reasons : ["No reason was given."])
      list.appendChild(el("li", {}, reason));
    td.appendChild(list);
  } else {
    td.appendChild(el("span", { class: "reliability reliability--ok" }, "No concern"));
  }
  return td;
}

function plural(n, word) {
  return `${fmt.int(n)} ${word}${n === 1 ? "" : "s"}`;
}

function actionButton(label, ariaLabel, onClick, danger = false) {
  const button = el(
    "button",
    { type: "button", class: `button button--small${danger ? " button--danger" : ""}` },
    label,
  );
  button.setAttribute("aria-label", ariaLabel);
  button.addEventListener("click", onClick);
  return button;
}

function actionsCell(a) {
  const td = el("td", { class: "row-actions row-actions--stacked" });
  if (!a.id) return td;
  const counted = a.counted_judgments ?? 0;
  const aside = a.set_aside_judgments ?? 0;
  if (a.set_aside) {
    td.appendChild(el("span", { class: "assessor-held" }, `${plural(aside, "judgment")} set aside`));
    td.appendChild(
      actionButton("Bring back…", `Bring back the judgments of ${a.pseudonym}`, () =>
        confirmAction(a, "bring-back", {
          heading: `Bring back ${a.pseudonym}'s judgments?`,
          text:
            `${plural(aside, "set-aside judgment")} of ${a.pseudonym} count again, except those whose ` +
            "pair was judged again meanwhile (no pair is judged more often than the campaign asks). " +
            `${a.pseudonym} may be handed pairs again.`,
          confirm: `Bring back ${plural(aside, "judgment")}`,
        }),
      ),
    );
  } else {
    td.appendChild(
      actionButton(
        "Set aside…",
        `Set aside the judgments of ${a.pseudonym}`,
        () =>
          confirmAction(a, "set-aside", {
            heading: `Set aside ${a.pseudonym}'s judgments?`,
            text:
              `${plural(counted, "judgment")} of ${a.pseudonym} will count nowhere: their pairs go back ` +
              `to the pool and the planner asks for them again. ${a.pseudonym} is handed no more ` +
              "pairs. You can bring the judgments back later.",
            confirm: `Set aside ${plural(counted, "judgment")}`,
          }),
        true,
      ),
    );
  }
  if (a.paused) {
    td.appendChild(el("span", { class: "assessor-held" }, "paused"));
    td.appendChild(actionButton("Resume", `Resume ${a.pseudonym}`, () => act(a, "resume")));
  } else {
    td.appendChild(
      actionButton("Pause…", `Pause ${a.pseudonym}`, () =>
        confirmAction(a, "pause", {
          heading: `Pause ${a.pseudonym}?`,
          text: `${a.pseudonym} is handed no more pairs until resumed; the pair they hold goes back to the pool and their judgments stay.`,
          confirm: "Pause",
          message: true,
        }),
      ),
    );
  }
  return td;
}

// the kinds of hidden quality trial in words (templates/partials/trials.html says the same)
const TRIAL_NAMES = { reference: "reference", anchor: "anchor", repeat: "repeat", second: "second opinion" };

function trialsByKind(counts) {
  return Object.entries(counts || {})
    .filter(([, n]) => n)
    .map(([kind, n]) => `${fmt.int(n)} ${TRIAL_NAMES[kind] || kind}`)
    .join(", ");
}

// an assessor's time spent, with the listening in it
function spentCell(spent) {
  const td = el("td", { class: "num" }, spent ? formatHours(spent.hours) : "—");
  if (spent)
    td.appendChild(el("span", { class: "data-table__sub" }, `${formatHours(spent.listening_hours)} listening`));
  return td;
}

function renderAssessors(doc) {
  const spent = new Map((doc.listening?.assessors || []).map((a) => [a.id, a]));
  const rows = (doc.assessors || []).map((a) => {
    const tr = el("tr");
    tr.dataset.assessor = a.pseudonym;
    tr.appendChild(el("th", { scope: "row" }, a.pseudonym + (a.revoked ? " (revoked)" : "")));
    const judged = el("td", { class: "num" }, fmt.int(a.counted_judgments ?? a.judged));
    if (a.set_aside_judgments)
      judged.appendChild(el("span", { class: "data-table__sub" }, `${fmt.int(a.set_aside_judgments)} set aside`));
    if (a.quality_trials) {
      const kinds = trialsByKind(a.trials_by_kind);
      judged.appendChild(
        el(
          "span",
          { class: "data-table__sub" },
          `${fmt.int(a.quality_trials)} quality trials${kinds ? `: ${kinds}` : ""}`,
        ),
      );
    }
    tr.appendChild(judged);
    tr.appendChild(spentCell(spent.get(a.id)));
    tr.appendChild(
      el(
        "td",
        { class: "num" },
        a.median_seconds_per_judgment === null ? "—" : `${a.median_seconds_per_judgment.toFixed(1)} s`,
      ),
    );
    tr.appendChild(
      el("td", { class: "num" }, a.median_listen_ms === null ? "—" : `${(a.median_listen_ms / 1000).toFixed(1)} s`),
    );
    tr.appendChild(el("td", {}, fmt.ago(a.last_active)));
    let now = a.live_lease ? "judging a pair" : "—";
    if (a.set_aside) now = "set aside";
    else if (a.paused) now = "paused";
    tr.appendChild(el("td", {}, now));
    tr.appendChild(reliabilityCell(a));
    tr.appendChild(actionsCell(a));
    return tr;
  });
  if (!rows.length) {
    const tr = el("tr");
    tr.appendChild(el("td", { colspan: "9" }, "No assessor invited yet."));
    rows.push(tr);
  }
  byId("assessors-body").replaceChildren(...rows);
}

// ------------------------------------------------------------------ acting on an assessor

const dialog = byId("assessor-dialog");
let pending = null; // [assessor, action] the open dialog asks about

function confirmAction(a, action, { heading, text, confirm, message = false }) {
  pending = [a, action];
  byId("assessor-dialog-heading").textContent = heading;
  byId("assessor-dialog-text").textContent = text;
  byId("assessor-dialog-confirm").textContent = confirm;
  byId("assessor-dialog-message-field").hidden = !message;
  byId("assessor-dialog-message").value = "";
  dialog.showModal();
}

dialog.addEventListener("close", () => {
  const chosen = dialog.returnValue;
  const [a, action] = pending || [];
  pending = null;
  if (chosen === "confirm" && a) {
    const message = byId("assessor-dialog-message").value.trim();
    act(a, action, action === "pause" && message ? { message } : undefined);
  }
});

function said(a, action, data) {
  if (action === "set-aside") {
    return `${a.pseudonym}: ${plural(data.set_aside, "judgment")} set aside; their pairs are back in the pool.`;
  }
  if (action === "bring-back") {
    let text = `${a.pseudonym}: ${plural(data.brought_back, "judgment")} brought back.`;
    if (data.stayed_aside) text += ` ${plural(data.stayed_aside, "judgment")} stay aside: ${data.reason}.`;
    return text;
  }
  return action === "pause" ? `${a.pseudonym} is paused.` : `${a.pseudonym} may judge again.`;
}

async function act(a, action, json) {
  const status = byId("assessor-action-status");
  status.textContent = "Working…";
  const url = `${root.dataset.assessorsUrl}/${a.id}/${action}`;
  try {
    const { ok, status: code, data } = await request(url, { method: "POST", json, csrf: root.dataset.csrf });
    if (!ok) {
      status.textContent = `Not done: ${errorDetail(data) || `the server answered ${code}`}.`;
      return;
    }
    status.textContent = said(a, action, data);
    const fresh = await request(resultsUrl);
    if (fresh.ok && fresh.data) accept(fresh.data);
  } catch (_) {
    status.textContent = "Not done: the server could not be reached. Try again.";
  }
}

// ------------------------------------------------------------------ data flow

function render() {
  const driving = state.driving;
  if (!driving) return;
  renderSummary(driving);
  renderCurve(driving);
  renderAssessors(driving);
  const shown =
    state.shown && state.shown.measure === state.measure && state.shown.scale === state.scale ? state.shown : driving;
  renderForest(shown);
  renderHeatmap(shown);
  byId("measure-note").hidden = shown === driving && driving.measure === state.measure && driving.scale === state.scale;
}

function isDriving() {
  return state.driving && state.measure === state.driving.measure && state.scale === state.driving.scale;
}

async function fetchShown() {
  if (isDriving()) {
    state.shown = state.driving;
    render();
    return;
  }
  const url = `${resultsUrl}?measure=${encodeURIComponent(state.measure)}&scale=${encodeURIComponent(state.scale)}`;
  const { ok, status, data } = await request(url);
  if (!ok) {
    setStatus("error", `Could not load ${state.measure} (${status})`);
    return;
  }
  state.shown = data;
  render();
}

function setStatus(kind, text) {
  const node = byId("live-status");
  node.dataset.state = kind;
  node.textContent = text;
}

function accept(doc) {
  state.driving = doc;
  if (isDriving()) state.shown = doc;
  render();
  if (!isDriving()) fetchShown();
}

async function start() {
  setStatus("connecting", "Connecting…");
  try {
    const { ok, data } = await request(resultsUrl);
    if (ok && data) accept(data);
  } catch (_) {
    /* the stream below retries */
  }
  if (!window.EventSource) {
    setStatus("error", "This browser cannot receive live updates: reload to refresh.");
    return;
  }
  const source = new EventSource(eventsUrl, { withCredentials: true });
  source.addEventListener("open", () => setStatus("live", "Live"));
  source.addEventListener("results", (event) => {
    setStatus("live", "Live");
    accept(JSON.parse(event.data));
  });
  source.addEventListener("error", () => setStatus("reconnecting", "Reconnecting…"));
}

byId("measure").addEventListener("change", (e) => {
  state.measure = e.target.value;
  fetchShown();
});
byId("scale").addEventListener("change", (e) => {
  state.scale = e.target.value;
  fetchShown();
});
// the downloads on one scale follow the scale shown
byId("scale").addEventListener("change", (e) => {
  for (const link of $$("a[data-scaled]")) {
    const url = new URL(link.href);
    url.searchParams.set("scale", e.target.value);
    link.href = url.pathname + url.search;
  }
  for (const label of $$("[data-download-scale]")) label.textContent = e.target.value.toUpperCase();
});
let resizing = null;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(render, 150);
});
// relative times ("3 min ago") age between events
setInterval(() => {
  if (state.driving) {
    renderAssessors(state.driving);
    renderWarnings(state.driving, state.driving.pool_pairs - state.driving.playable_pairs);
  }
}, 30000);
start();
