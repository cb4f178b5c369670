// The scores: BROAD (three categories) and FINE (0 to 100) in a form, for the pair on screen
// and in the revision dialog, and the pair's Submit button with its hint and its error line.

import { $, $$ } from "../lib.js";
import { announce, releaseFocusAfterPointer, root } from "./page.js";
import { clampFine, nudgedFine, scoresDisagree } from "./rules.js";

/** The BROAD categories' names, as the page's form shows them (templates/partials/judge_macros.html). */
export const BROAD_LABELS = Object.fromEntries(
  $$("#score-form .broad__option").map((option) => [
    Number($("input", option).value),
    $(".broad__text", option).textContent.trim(),
  ]),
);

/** A form's BROAD radios and FINE slider; FINE is unset until it is moved. `onChange()` after each change. */
export class ScoreForm {
  constructor(form, onChange) {
    this.form = form;
    this.onChange = onChange;
    this.radios = $$('input[type="radio"]', form);
    this.slider = $('[data-role="fine"]', form);
    this.valueText = $('[data-role="fine-value"]', form);
    this.warning = $('[data-role="disagreement"]', form);
    this.fineSet = false;

    for (const radio of this.radios) {
      radio.addEventListener("change", () => {
        this.render();
        releaseFocusAfterPointer(radio);
      });
    }
    this.slider.addEventListener("input", () => this.setFine(Number(this.slider.value)));
    // A click on the thumb's current spot changes nothing, so "input" never fires: count it.
    this.slider.addEventListener("pointerup", () => this.setFine(Number(this.slider.value)));
  }

  get broad() {
    const checked = this.radios.find((radio) => radio.checked);
    return checked ? Number(checked.value) : null;
  }

  set broad(value) {
    for (const radio of this.radios) radio.checked = Number(radio.value) === value;
    this.render();
  }

  get fine() {
    return this.fineSet ? Number(this.slider.value) : null;
  }

  setFine(value) {
    this.slider.value = String(clampFine(value));
    this.fineSet = true;
    this.render();
  }

  nudgeFine(delta) {
    this.setFine(nudgedFine(this.fine, delta));
  }

  get complete() {
    return this.broad !== null && this.fine !== null;
  }

  reset() {
    for (const radio of this.radios) radio.checked = false;
    this.fineSet = false;
    this.slider.value = "50";
    this.render();
  }

  fill(broad, fine) {
    this.reset();
    if (broad !== null && broad !== undefined) this.broad = Number(broad);
    if (fine !== null && fine !== undefined) this.setFine(Number(fine));
  }

  disagreement() {
    const { broad, fine } = this;
    if (!scoresDisagree(broad, fine)) return null;
    return (
      `“${BROAD_LABELS[broad]}” with a FINE score of ${fine}: do the two agree? ` +
      "You can submit anyway if that is what you mean."
    );
  }

  render() {
    const fine = this.fine;
    this.valueText.textContent = fine === null ? "–" : String(fine);
    this.slider.classList.toggle("is-unset", fine === null);
    this.slider.setAttribute("aria-valuetext", fine === null ? "not set" : String(fine));
    this.slider.style.setProperty("--fill", `${fine ?? 0}%`);
    const warning = this.disagreement();
    this.warning.hidden = warning === null;
    this.warning.textContent = warning ?? "";
    this.onChange?.();
  }
}

// ---------------------------------------------------------------- the pair's Submit

const submitButton = $("#submit-button");
const submitHint = $("#submit-hint");
const submitError = $("#submit-error");

/** Enable Submit when the pair is `ready` and not `submitting`, and say what it waits for (`hint`). */
export function renderSubmit({ ready, submitting, hint }) {
  submitButton.disabled = !ready || submitting;
  // the hint is a live region: only a real change is written (and so read out)
  if (submitHint.textContent !== hint) submitHint.textContent = hint;
  root.dataset.ready = String(ready);
}

export function submitDisabled() {
  return submitButton.disabled;
}

/** Draw the eye (and a screen reader) to what Submit waits for. */
export function nudgeSubmitHint() {
  submitHint.classList.remove("is-nudged");
  void submitHint.offsetWidth; // restart the highlight animation
  submitHint.classList.add("is-nudged");
  announce(submitHint.textContent);
}

export function showSubmitError(message) {
  submitError.textContent = message;
  submitError.hidden = false;
}

export function hideSubmitError() {
  submitError.hidden = true;
}
