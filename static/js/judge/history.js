// "Recent judgments" in the side panel, and the dialog that revises one of them: its two
// clips (played again at will) and its scores, saved with PUT.

import { $, el, NetworkError } from "../lib.js";
import { BROAD_LABELS, ScoreForm } from "./form.js";
import { formatAgo } from "./format.js";
import { fetchHistory, reviseJudgment } from "./network.js";
import { announce, restFocus } from "./page.js";
import { ClipPlayer, levelPair, pauseAll } from "./player.js";
import { renderProgress } from "./progress.js";
import { historyFrom, withJudgment } from "./summary.js";

const editDialog = $("#edit-dialog");
let historyItems = [];
let editedId = null;
let editByPointer = false;

/** The revision dialog's players and form, and the judgment it revises (null when closed). */
export const edit = {
  query: new ClipPlayer($("#edit-query-player")),
  candidate: new ClipPlayer($("#edit-candidate-player")),
  form: new ScoreForm($("#edit-form"), () => {
    $("#edit-error").hidden = true;
  }),
  judgment: null,
};

export function revisionOpen() {
  return editDialog.open;
}

/** Fetch the recent judgments again (a failure leaves the list as it is). */
export async function refreshHistory() {
  let data;
  try {
    data = await fetchHistory();
  } catch {
    return;
  }
  historyItems = historyFrom(data);
  renderHistory();
}

// The answers to POST and PUT carry the stored judgment: the list is updated from them
// rather than fetched again.
export function rememberJudgment(judgment) {
  if (!judgment) return;
  historyItems = withJudgment(historyItems, judgment);
  renderHistory();
}

function renderHistory() {
  $("#history-list").replaceChildren(...historyItems.map(historyItem));
  $("#history-empty").hidden = historyItems.length > 0;
}

function historyItem(judgment) {
  const broad = el("span", { class: `chip chip--${judgment.broad}` }, BROAD_LABELS[judgment.broad] ?? "–");
  const fine = el(
    "span",
    { class: "history__fine" },
    `FINE ${judgment.fine === null ? "–" : Math.round(judgment.fine)}`,
  );
  const label = el(
    "span",
    { class: "history__pair" },
    `Query ${judgment.query_number} · candidate ${judgment.candidate_number}`,
  );
  const when = el(
    "span",
    { class: "history__when" },
    formatAgo(judgment.created_at) + (judgment.revision > 0 ? " · revised" : ""),
  );
  const button = el(
    "button",
    {
      type: "button",
      class: "button button--small",
      "aria-label": `Edit the judgment of ${label.textContent} from ${when.textContent}: ${broad.textContent}, ${fine.textContent}`,
      "data-judgment-id": judgment.id,
    },
    "Edit",
  );
  // detail is 0 for a click made with the keyboard (Enter or Space on the button)
  button.addEventListener("click", (event) => openRevision(judgment, event.detail > 0));
  const details = el("span", { class: "history__details" });
  details.append(label, " · ", fine, " · ", when);
  const item = el("li", { class: "history__item" });
  item.append(broad, details, button);
  return item;
}

function openRevision(judgment, byPointer) {
  edit.judgment = judgment;
  editedId = judgment.id;
  editByPointer = byPointer;
  pauseAll(); // the pair's clips (the dialog's are idle while it is closed)
  edit.form.fill(judgment.broad, judgment.fine);
  Promise.all([edit.query.load(judgment.query), edit.candidate.load(judgment.candidate)]).then(() => {
    if (edit.judgment === judgment) levelPair(edit);
  });
  $("#edit-when").textContent =
    `Judged ${formatAgo(judgment.created_at)}. Listen again if you like, then change the scores.`;
  $("#edit-error").hidden = true;
  editDialog.showModal();
}

export function closeRevision() {
  if (editDialog.open) editDialog.close();
}

editDialog.addEventListener("close", () => {
  edit.query.unload();
  edit.candidate.unload();
  edit.judgment = null;
  // Keyboard users go back to the Edit button of that judgment (the list may have been
  // redrawn meanwhile); after a mouse click, focus rests where Enter submits the pair.
  const opener = $(`#history-list button[data-judgment-id="${editedId}"]`);
  if (opener && !editByPointer) opener.focus();
  else restFocus();
  editedId = null;
});

export async function saveRevision() {
  const judgment = edit.judgment;
  const errorBox = $("#edit-error");
  if (judgment === null) return;
  if (!edit.form.complete) {
    errorBox.textContent = "Choose BROAD and set FINE before saving.";
    errorBox.hidden = false;
    return;
  }
  const saveButton = $("#edit-save");
  saveButton.disabled = true;
  try {
    const result = await reviseJudgment(judgment.id, { broad: edit.form.broad, fine: edit.form.fine });
    renderProgress(result?.progress);
    rememberJudgment(result?.judgment);
    closeRevision();
    announce("Judgment revised.");
  } catch (error) {
    errorBox.textContent = error instanceof NetworkError ? "Could not reach the server; try again." : error.message;
    errorBox.hidden = false;
  } finally {
    saveButton.disabled = false;
  }
}
