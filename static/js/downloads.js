// The dashboard's export links (templates/dashboard.html, "Report and exports"). Each is
// fetched here rather than followed, so that an export the server refuses says why beside
// the links, where a browser shows only "download failed": one without rows (409
// empty_export: no BROAD judgments in a campaign judged on FINE, nothing left to estimate,
// nobody invited yet) comes with a link to download the empty file anyway. A file is handed
// to the browser under the name the server gives it.

import { $, $$, el, errorDetail, fetchAttachment } from "./lib.js";

function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name, hidden: "" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function say(box, parts) {
  box.replaceChildren(...parts);
  box.hidden = parts.length === 0;
}

async function download(link, box) {
  const label = link.textContent.trim();
  say(box, [`Preparing ${label}…`]);
  let answer;
  try {
    answer = await fetchAttachment(link.href);
  } catch {
    say(box, [`${label}: the server could not be reached; try again.`]);
    return;
  }
  if (!answer.ok) {
    const { data, status } = answer;
    let detail = errorDetail(data) || `the server answered ${status}.`;
    if (data?.error === "empty_export") {
      // the API's way to ask for the empty file; here it is the link that follows
      detail = `${detail.replace(/\s*\(allow_empty=true[^)]*\)$/, "")}.`;
    }
    const parts = [el("strong", {}, label), `: ${detail}`];
    if (data?.error === "empty_export") {
      const url = new URL(link.href);
      url.searchParams.set("allow_empty", "true");
      const anyway = el("a", { href: url.pathname + url.search, download: "" }, "Download the empty file anyway");
      parts.push(" ", anyway);
    }
    say(box, parts);
    return;
  }
  save(answer.blob, answer.name || "export");
  say(box, []);
}

const box = $("[data-download-status]");
if (box) {
  for (const link of $$("a[data-export]")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      download(link, box);
    });
  }
}
