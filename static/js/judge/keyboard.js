// The judging page's shortcuts (keys.js says which key does what) and their help dialog.
// They act on a context, {query, candidate, form, submit}: the pair on screen, or the
// revision dialog's judgment.

import { $ } from "../lib.js";
import { shortcut } from "./keys.js";
import { restFocus } from "./page.js";

const helpDialog = $("#help-dialog");
let helpByPointer = false;

/** Open or close the shortcuts' help; `byPointer`: focus rests on the page when it closes. */
export function toggleHelp(byPointer = false) {
  if (helpDialog.open) {
    helpDialog.close();
  } else {
    helpByPointer = byPointer;
    helpDialog.showModal();
  }
}

helpDialog.addEventListener("close", () => {
  if (helpByPointer) restFocus();
});
// A click on the backdrop (outside the box) closes the help.
helpDialog.addEventListener("click", (event) => {
  if (event.target === helpDialog) helpDialog.close();
});

/** Whether keys typed on `target` are text, which no shortcut takes. */
function isTyping(target) {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["range", "radio", "checkbox", "button", "submit", "reset"].includes(target.type);
  }
  return false;
}

/**
 * Whether Enter on `target` keeps its own meaning: a focused button or link (edit, take a
 * break, ...), except a player's buttons (Space presses those) and a submit button.
 */
function enterIsTargets(target) {
  if (target instanceof Element && target.closest(".player")) return false;
  return (target instanceof HTMLButtonElement && target.type !== "submit") || target instanceof HTMLAnchorElement;
}

/** The clip the seek and loop keys act on: the one playing, else the last one used. */
function activePlayer(context) {
  const { query, candidate } = context;
  if (query.playing || candidate.playing) return query.playing ? query : candidate;
  return candidate.touchedAt > query.touchedAt ? candidate : query;
}

function perform(action, context) {
  switch (action.do) {
    case "broad":
      context.form.broad = action.value;
      break;
    case "toggle":
      context[action.clip].toggle();
      break;
    case "restart":
      context[action.clip].restart();
      break;
    case "seek":
      activePlayer(context).seekBy(action.by);
      break;
    case "mark":
      activePlayer(context).markLoop(action.edge);
      break;
    case "clear-loop":
      activePlayer(context).clearLoop();
      break;
    case "fine":
      // (a focused waveform has taken its arrows already: they seek that clip)
      context.form.nudgeFine(action.by);
      break;
    case "submit":
      context.submit();
      break;
    default:
  }
}

/** Listen to the keys; `activeContext()` is what they act on (null: nothing, as on a panel). */
export function installShortcuts(activeContext) {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target)) return;
    const action = shortcut(event.key, event.shiftKey);
    if (action?.do === "help") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    if (helpDialog.open) return; // Esc closes it natively
    const context = activeContext();
    if (context === null || action === null) return;
    if (action.do === "submit" && enterIsTargets(event.target)) return;
    event.preventDefault();
    perform(action, context);
  });
}
