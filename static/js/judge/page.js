// What every part of the judging page shares: its root element and what the server put on
// it, the live region that announces changes, and where focus rests.

import { $ } from "../lib.js";

export const root = $("#judge");
/** The assessor API's base path (/api/a/{token}). */
export const API = root.dataset.api;
/** The campaign's listening rule as the page was served (the API's pair repeats it). */
export const CAMPAIGN_LISTEN_SECONDS = Number(root.dataset.listenSeconds) || 0;

const announcer = $("#announcer");

/** Say `message` to screen readers. */
export function announce(message) {
  // Clearing first makes screen readers repeat an identical message.
  announcer.textContent = "";
  setTimeout(() => {
    announcer.textContent = message;
  }, 50);
}

// Mouse clicks should not leave focus on a control: otherwise ←/→ would move the radio
// group or a seek bar and Enter would press the last clicked button instead of submitting.
let lastPointerDown = 0;
document.addEventListener(
  "pointerdown",
  () => {
    lastPointerDown = performance.now();
  },
  true,
);

/** Take focus off `element` when a pointer (not the keyboard) has just used it. */
export function releaseFocusAfterPointer(element) {
  if (performance.now() - lastPointerDown < 1500) element.blur();
}

export function focusHeading(selector) {
  const heading = $(selector);
  heading?.focus({ preventScroll: true });
}

/** Focus the heading of the visible state, where every shortcut (and Enter) works. */
export function restFocus() {
  $(`[data-panel="${root.dataset.state}"] h1`)?.focus({ preventScroll: true });
}
