// A clip's waveform, which is also its seek bar (a slider in seconds): the peaks drawn on a
// <canvas> (the played part in the accent colour), the playhead, the loop region; a click
// seeks, a drag loops, and the focused slider takes the arrows, Page Up / Page Down, Home,
// End and Space. It plays nothing itself: it asks its ClipPlayer (player.js).

import { $ } from "../lib.js";
import { formatTime } from "./format.js";
import { waveKey } from "./keys.js";
import { barHeights } from "./levels.js";
import { releaseFocusAfterPointer } from "./page.js";
import { timeAtX } from "./timeline.js";

/** A pointer moved less than this (CSS pixels) between down and up clicks, else drags. */
const DRAG_PIXELS = 6;

function cssColor(element, name) {
  return getComputedStyle(element).getPropertyValue(name).trim() || "#888";
}

export class Waveform {
  /** The waveform of the player `element`, for `player` (its clip, position and loop). */
  constructor(element, player) {
    this.player = player;
    this.wave = $('[data-role="wave"]', element);
    this.canvas = $('[data-role="canvas"]', element);
    this.playhead = $('[data-role="playhead"]', element);
    this.loopRegion = $('[data-role="loop-region"]', element);
    this.reset();
    this.wave.addEventListener("keydown", (event) => this.onKey(event));
    this.wave.addEventListener("pointerdown", (event) => this.onPointerDown(event));
    this.wave.addEventListener("pointermove", (event) => this.onPointerMove(event));
    this.wave.addEventListener("pointerup", (event) => this.onPointerUp(event));
    this.wave.addEventListener("pointercancel", () => {
      this.drag = null;
      this.player.render();
    });
    this.wave.addEventListener("focus", () => player.touch());
    new ResizeObserver(() => this.draw()).observe(this.wave);
  }

  reset() {
    this.peaks = null; // measurePeaks of the clip, once decoded
    this.drag = null; // {x, from, to}: where a pointer went down, and the times it spans
  }

  focus() {
    this.wave.focus();
  }

  // ------------------------------------------------ pointer and keys

  timeAt(clientX) {
    const box = this.wave.getBoundingClientRect();
    return timeAtX(clientX, box.left, box.width, this.player.duration);
  }

  onPointerDown(event) {
    if (this.player.buffer === null || event.button !== 0) return;
    event.preventDefault(); // no text selection, no focus ring from the mouse
    this.wave.setPointerCapture(event.pointerId);
    this.drag = { x: event.clientX, from: this.timeAt(event.clientX), to: null };
  }

  onPointerMove(event) {
    if (this.drag === null) return;
    if (this.drag.to === null && Math.abs(event.clientX - this.drag.x) < DRAG_PIXELS) return;
    this.drag.to = this.timeAt(event.clientX);
    this.player.render();
  }

  onPointerUp(event) {
    const drag = this.drag;
    this.drag = null;
    if (drag === null) return;
    if (drag.to === null) this.player.seek(drag.from);
    else this.player.setLoop(Math.min(drag.from, drag.to), Math.max(drag.from, drag.to));
    this.player.render();
    releaseFocusAfterPointer(this.wave);
    event.preventDefault();
  }

  onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const action = waveKey(event.key, event.shiftKey);
    if (action === null) return;
    const player = this.player;
    if (action.do === "seek") player.seekBy(action.by);
    else if (action.do === "toggle") player.toggle();
    else if (action.do === "home") player.seek(player.loop?.start ?? 0);
    else player.seek(player.loop?.end ?? player.duration);
    event.preventDefault();
  }

  // ------------------------------------------------ drawing

  /** The slider's value and the loop region at `current` of `duration` seconds, then the picture. */
  render(current, duration) {
    const { loop } = this.player;
    const fraction = duration > 0 ? Math.min(1, current / duration) : 0;
    this.playhead.style.left = `${fraction * 100}%`;
    this.wave.setAttribute("aria-valuemax", duration.toFixed(1));
    this.wave.setAttribute("aria-valuenow", current.toFixed(1));
    this.wave.setAttribute(
      "aria-valuetext",
      `${formatTime(current)} of ${formatTime(duration)}` +
        (loop ? `, looping ${formatTime(loop.start)} to ${formatTime(loop.end)}` : ""),
    );
    this.wave.setAttribute("aria-disabled", String(this.player.buffer === null));

    // while dragging, the region being drawn; else the loop
    const region = this.drag && this.drag.to !== null ? { start: this.drag.from, end: this.drag.to } : loop;
    this.loopRegion.hidden = region === null || !(duration > 0);
    if (region && duration > 0) {
      const a = Math.min(region.start, region.end) / duration;
      const b = Math.max(region.start, region.end) / duration;
      this.loopRegion.style.left = `${a * 100}%`;
      this.loopRegion.style.width = `${(b - a) * 100}%`;
    }
    this.draw();
  }

  /** Draw the bars at the canvas's size in device pixels, the played ones in their colour. */
  draw() {
    const canvas = this.canvas;
    const width = Math.max(1, Math.round(canvas.clientWidth * devicePixelRatio));
    const height = Math.max(1, Math.round(canvas.clientHeight * devicePixelRatio));
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, width, height);
    const duration = this.player.duration;
    const played = duration > 0 ? Math.min(1, this.player.currentTime() / duration) : 0;
    const bar = Math.max(2, Math.round(3 * devicePixelRatio));
    const gap = Math.max(1, Math.round(devicePixelRatio));
    const middle = height / 2;
    const playedColor = cssColor(this.wave, "--wave-played");
    const restColor = cssColor(this.wave, "--wave-rest");
    barHeights(this.peaks, Math.floor(width / (bar + gap))).forEach((value, column) => {
      const x = column * (bar + gap);
      const h = Math.max(gap, value * (height - 2));
      g.fillStyle = (x + bar / 2) / width <= played ? playedColor : restColor;
      g.fillRect(x, middle - h / 2, bar, h);
    });
  }
}
