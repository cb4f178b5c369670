// The judging page: plays the two clips, collects BROAD + FINE and talks to /api/a/{token}/.
// Blind by design: it only ever shows what the API sends (audio URLs, durations, the
// assessor's own scores and campaign-wide counts), never systems, ranks or document ids.

import { audioContext, fetchClip, practiceClips, resumeAudio, testSound } from "./judge/audio.js";
import { levelGains, measureLoudness, measurePeaks, TARGET_LUFS } from "./judge/levels.js";
import { $, $$, ApiError, el, NetworkError, api as send } from "./lib.js";

const root = $("#judge");
const API = root.dataset.api;

const WAIT_SECONDS = 30;
const RETRY_DELAY_MS = 800;
// The BROAD categories' names, as the page's form shows them (templates/partials/judge_macros.html).
const BROAD_LABELS = Object.fromEntries(
  $$("#score-form .broad__option").map((option) => [
    Number($("input", option).value),
    $(".broad__text", option).textContent.trim(),
  ]),
);

// ---------------------------------------------------------------- small helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const numberFormat = new Intl.NumberFormat();

/** 83.4 -> "1:23" (or "1:23.4" when `precise`). */
function formatTime(seconds, precise = false) {
  const value = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  if (precise) {
    const tenths = Math.round(value * 10);
    const whole = Math.floor(tenths / 10);
    return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}.${tenths % 10}`;
  }
  const whole = Math.floor(value);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

function formatAgo(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, (Date.now() - then) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}

// crypto.randomUUID exists only in secure contexts (HTTPS or localhost); a plain-HTTP
// deployment still needs an idempotency key, so build a v4 UUID by hand there.
function newClientId() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const announcer = $("#announcer");
function announce(message) {
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
function releaseFocusAfterPointer(element) {
  if (performance.now() - lastPointerDown < 1500) element.blur();
}

// ---------------------------------------------------------------- API

/** The assessor API (no CSRF token: the assessor's token in the path is the credential). */
function api(method, path, body) {
  return send(`${API}/${path}`, { method, json: body, cache: "no-store" });
}

// ---------------------------------------------------------------- audio players

const allPlayers = new Set();
const SEEK_STEP = 1; // seconds, ← → on a waveform and J L
const SEEK_BIG_STEP = 5; // seconds, with Shift, and Page Up / Page Down
const MIN_LOOP = 0.25; // seconds: a shorter drag is a click
const DRAG_PIXELS = 6;

function cssColor(element, name) {
  return getComputedStyle(element).getPropertyValue(name).trim() || "#888";
}

/**
 * One clip: decoded from its URL (or made in the browser), played through a GainNode that
 * levels it, drawn as a waveform that is also its seek bar (a slider in seconds), with an
 * optional loop region. `listened()` is the time sound was actually rendered (the audio
 * clock while playing: seeking adds nothing, a loop counts each time it plays).
 */
class ClipPlayer {
  constructor(element, { onChange } = {}) {
    this.element = element;
    this.onChange = onChange;
    this.label = $(".player__label", element).textContent.trim().toLowerCase();
    this.toggleButton = $('[data-action="toggle"]', element);
    this.restartButton = $('[data-action="restart"]', element);
    this.wave = $('[data-role="wave"]', element);
    this.canvas = $('[data-role="canvas"]', element);
    this.playhead = $('[data-role="playhead"]', element);
    this.loopRegion = $('[data-role="loop-region"]', element);
    this.loopBar = $('[data-role="loopbar"]', element);
    this.loopLabel = $('[data-role="loop-label"]', element);
    this.elapsedText = $('[data-role="elapsed"]', element);
    this.durationText = $('[data-role="duration"]', element);
    this.listenedLine = $('[data-role="listened-line"]', element);
    this.listenBar = $('[data-role="listen-bar"]', element);
    this.listenFill = $('[data-role="listen-fill"]', element);
    this.levelText = $('[data-role="level"]', element);
    this.statusText = $('[data-role="status"]', element);
    this.gain = null;
    this.requiredSeconds = 0;
    this.touchedAt = 0;
    this.reset();
    allPlayers.add(this);

    this.toggleButton.addEventListener("click", () => {
      this.toggle();
      releaseFocusAfterPointer(this.toggleButton);
    });
    this.restartButton.addEventListener("click", () => {
      this.restart();
      releaseFocusAfterPointer(this.restartButton);
    });
    $('[data-action="clear-loop"]', element).addEventListener("click", (event) => {
      this.clearLoop();
      if (event.detail > 0) restFocus();
      else this.wave.focus();
    });
    this.wave.addEventListener("keydown", (event) => this.onWaveKey(event));
    this.wave.addEventListener("pointerdown", (event) => this.onPointerDown(event));
    this.wave.addEventListener("pointermove", (event) => this.onPointerMove(event));
    this.wave.addEventListener("pointerup", (event) => this.onPointerUp(event));
    this.wave.addEventListener("pointercancel", () => {
      this.drag = null;
      this.render();
    });
    this.wave.addEventListener("focus", () => this.touch());
    new ResizeObserver(() => this.draw()).observe(this.wave);
  }

  reset() {
    this.buffer = null;
    this.source = null;
    this.playing = false;
    this.startedAt = 0; // the audio clock when the current source started
    this.startOffset = 0; // where in the clip it started
    this.position = 0; // while paused
    this.listenedSeconds = 0;
    this.loop = null; // {start, end} in seconds
    this.drag = null;
    this.peaks = null;
    this.level = null; // {loudness, peak} once measured
    this.gainDb = 0;
    this.apiDuration = 0;
    this.pendingPlay = false;
    this.loadId = (this.loadId ?? 0) + 1;
    this.loading = null;
    this.abort?.abort();
    this.abort = null;
    this.metRule = false;
    this.element.dataset.state = "empty";
    delete this.element.dataset.loudness;
    delete this.element.dataset.gainDb;
  }

  get duration() {
    return this.buffer?.duration ?? this.apiDuration;
  }

  get loaded() {
    return this.buffer !== null || this.loading !== null;
  }

  /** Load a clip of the API ({audio_url, duration_seconds}); resolves once decoded (or failed). */
  load(clip) {
    this.stop();
    this.reset();
    this.apiDuration = Number(clip?.duration_seconds) || 0;
    this.setStatus("");
    if (!clip?.audio_url) {
      this.element.dataset.state = "error";
      this.setStatus("No audio for this clip: please tell the organizer.");
      this.render();
      return Promise.resolve();
    }
    const id = this.loadId;
    this.abort = new AbortController();
    this.element.dataset.state = "loading";
    this.setStatus("Loading the clip…");
    this.loading = fetchClip(new URL(clip.audio_url, window.location.href).href, this.abort.signal)
      .then((buffer) => {
        if (id === this.loadId) this.useBuffer(buffer);
      })
      .catch((error) => {
        if (id !== this.loadId || error.name === "AbortError") return;
        this.loading = null;
        this.pendingPlay = false;
        this.element.dataset.state = "error";
        this.setStatus(`${error.message} Please tell the organizer.`);
        this.render();
      });
    this.render();
    return this.loading;
  }

  /** Play a clip made in the browser (the practice pair). */
  loadBuffer(buffer) {
    this.stop();
    this.reset();
    this.useBuffer(buffer);
    return Promise.resolve();
  }

  useBuffer(buffer) {
    this.buffer = buffer;
    this.loading = null;
    this.level = measureLoudness(buffer);
    this.peaks = measurePeaks(buffer);
    this.element.dataset.state = "ready";
    this.element.dataset.loudness = Number.isFinite(this.level.loudness) ? this.level.loudness.toFixed(2) : "silent";
    this.setStatus("");
    this.draw();
    this.render();
    if (this.pendingPlay) {
      this.pendingPlay = false;
      this.play();
    }
  }

  unload() {
    this.stop();
    this.reset();
    this.setStatus("");
    this.setLevel(0, "");
    this.draw();
    this.render();
  }

  /** Set the clip's gain (dB) and what the page says about it. */
  setLevel(db, text) {
    this.gainDb = db;
    if (this.gain) this.gain.gain.value = 10 ** (db / 20);
    this.element.dataset.gainDb = db.toFixed(2);
    this.levelText.textContent = text;
  }

  touch() {
    this.touchedAt = performance.now();
    for (const player of $$(".player", this.element.parentElement)) {
      player.classList.toggle("is-current", player === this.element);
    }
  }

  toggle() {
    if (this.playing || this.pendingPlay) this.pause();
    else this.play();
  }

  play() {
    this.touch();
    if (this.buffer === null) {
      if (this.loading !== null) {
        this.pendingPlay = true;
        this.setStatus("Loading the clip… it plays as soon as it is ready.");
        this.render();
      }
      return;
    }
    if (this.playing) return;
    for (const other of allPlayers) if (other !== this) other.pause();
    let from = this.position;
    if (from >= this.duration - 0.01) from = 0;
    if (this.loop && (from < this.loop.start || from >= this.loop.end)) from = this.loop.start;
    this.startAt(from);
    resumeAudio().then((running) => {
      if (!running && this.playing) this.setStatus("Your browser blocked the sound: press play again.");
    });
  }

  startAt(offset) {
    const ctx = audioContext();
    if (this.gain === null) {
      this.gain = ctx.createGain();
      this.gain.connect(ctx.destination);
      this.gain.gain.value = 10 ** (this.gainDb / 20);
    }
    const source = ctx.createBufferSource();
    source.buffer = this.buffer;
    if (this.loop) {
      source.loop = true;
      source.loopStart = this.loop.start;
      source.loopEnd = this.loop.end;
    }
    source.connect(this.gain);
    source.onended = () => {
      if (this.source !== source) return;
      // played to the end: exactly the rest of the clip was rendered
      this.listenedSeconds += Math.max(0, this.buffer.duration - this.startOffset);
      this.source = null;
      this.playing = false;
      this.position = this.buffer.duration;
      this.changed();
    };
    source.start(0, offset);
    this.source = source;
    this.startedAt = ctx.currentTime;
    this.startOffset = offset;
    this.playing = true;
    this.setStatus("");
    this.changed();
  }

  /** Stop the sound, keeping the position and counting what was heard. */
  stop() {
    this.pendingPlay = false;
    if (!this.playing || this.source === null) return;
    const elapsed = audioContext().currentTime - this.startedAt;
    this.position = this.positionAfter(elapsed);
    this.listenedSeconds += this.loop ? elapsed : Math.min(elapsed, this.buffer.duration - this.startOffset);
    const source = this.source;
    this.source = null;
    this.playing = false;
    source.onended = null;
    try {
      source.stop();
    } catch {
      // already stopped
    }
    source.disconnect();
  }

  pause() {
    const was = this.playing || this.pendingPlay;
    this.stop();
    if (was) this.changed();
  }

  restart() {
    this.seek(this.loop?.start ?? 0);
    this.play();
  }

  positionAfter(elapsed) {
    const raw = this.startOffset + elapsed;
    if (this.loop && raw >= this.loop.end && this.startOffset < this.loop.end) {
      const length = this.loop.end - this.loop.start;
      return this.loop.start + ((raw - this.loop.start) % length);
    }
    return Math.min(raw, this.duration);
  }

  /** The current position in seconds. */
  currentTime() {
    if (!this.playing) return this.position;
    return this.positionAfter(audioContext().currentTime - this.startedAt);
  }

  seek(seconds) {
    if (this.buffer === null) return;
    this.touch();
    const to = Math.max(0, Math.min(this.duration, seconds));
    this.position = to;
    if (this.playing) {
      this.stop();
      this.position = to;
      if (to >= this.duration) {
        this.position = to;
        this.changed();
      } else {
        this.startAt(to);
      }
    } else {
      this.position = to;
      this.changed();
    }
  }

  seekBy(delta) {
    this.seek(this.currentTime() + delta);
  }

  /** Loop from `start` to `end` (seconds); either may be null: from the start, to the end. */
  setLoop(start, end) {
    if (this.buffer === null) return;
    this.touch();
    let from = Math.max(0, start ?? 0);
    let to = Math.min(this.duration, end ?? this.duration);
    if (to < from) [from, to] = [to, from];
    if (to - from < MIN_LOOP) {
      announce(`A loop must last at least ${MIN_LOOP} seconds.`);
      return;
    }
    const wasPlaying = this.playing;
    const at = this.currentTime();
    this.stop();
    this.loop = { start: from, end: to };
    const inside = at >= from && at < to;
    this.position = inside ? at : from;
    if (wasPlaying) this.startAt(this.position);
    else this.changed();
    announce(`The ${this.label} loops from ${formatTime(from, true)} to ${formatTime(to, true)}.`);
  }

  /** A (loop from here) and B (loop until here), for the keyboard. */
  markLoop(edge) {
    if (this.buffer === null) return;
    const here = this.currentTime();
    if (edge === "start") this.setLoop(here, this.loop && this.loop.end > here ? this.loop.end : null);
    else this.setLoop(this.loop && this.loop.start < here ? this.loop.start : 0, here);
  }

  clearLoop() {
    if (this.loop === null) return;
    const wasPlaying = this.playing;
    this.stop();
    this.loop = null;
    if (wasPlaying) this.startAt(this.position);
    else this.changed();
    announce(`The ${this.label} no longer loops.`);
  }

  /** Milliseconds of sound rendered since the clip was loaded. */
  listened() {
    let seconds = this.listenedSeconds;
    if (this.playing) {
      const elapsed = audioContext().currentTime - this.startedAt;
      seconds += this.loop ? elapsed : Math.min(elapsed, this.buffer.duration - this.startOffset);
    }
    return Math.round(seconds * 1000);
  }

  /** Seconds of listening the rule asks of this clip (0: no rule). */
  required() {
    if (this.requiredSeconds <= 0) return 0;
    const duration = this.duration;
    return duration > 0 ? Math.min(this.requiredSeconds, duration) : this.requiredSeconds;
  }

  /** Whether the listening rule is met for this clip (always, without a rule). */
  ruleMet() {
    const need = this.required();
    return need <= 0 || this.listened() >= Math.round(need * 1000);
  }

  setStatus(message) {
    this.statusText.textContent = message;
  }

  // ------------------------------------------------ waveform: pointer and keys

  timeAt(clientX) {
    const box = this.wave.getBoundingClientRect();
    const fraction = box.width > 0 ? (clientX - box.left) / box.width : 0;
    return Math.max(0, Math.min(1, fraction)) * this.duration;
  }

  onPointerDown(event) {
    if (this.buffer === null || event.button !== 0) return;
    event.preventDefault(); // no text selection, no focus ring from the mouse
    this.wave.setPointerCapture(event.pointerId);
    this.drag = { x: event.clientX, from: this.timeAt(event.clientX), to: null };
  }

  onPointerMove(event) {
    if (this.drag === null) return;
    if (this.drag.to === null && Math.abs(event.clientX - this.drag.x) < DRAG_PIXELS) return;
    this.drag.to = this.timeAt(event.clientX);
    this.render();
  }

  onPointerUp(event) {
    const drag = this.drag;
    this.drag = null;
    if (drag === null) return;
    if (drag.to === null) this.seek(drag.from);
    else this.setLoop(Math.min(drag.from, drag.to), Math.max(drag.from, drag.to));
    this.render();
    releaseFocusAfterPointer(this.wave);
    event.preventDefault();
  }

  onWaveKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const big = event.shiftKey ? SEEK_BIG_STEP : SEEK_STEP;
    const moves = {
      ArrowLeft: -big,
      ArrowDown: -big,
      ArrowRight: big,
      ArrowUp: big,
      PageDown: -SEEK_BIG_STEP,
      PageUp: SEEK_BIG_STEP,
    };
    if (event.key in moves) this.seekBy(moves[event.key]);
    else if (event.key === " ") this.toggle();
    else if (event.key === "Home") this.seek(this.loop?.start ?? 0);
    else if (event.key === "End") this.seek(this.loop?.end ?? this.duration);
    else return;
    event.preventDefault();
  }

  // ------------------------------------------------ drawing

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
    const duration = this.duration;
    const played = duration > 0 ? Math.min(1, this.currentTime() / duration) : 0;
    const bar = Math.max(2, Math.round(3 * devicePixelRatio));
    const gap = Math.max(1, Math.round(devicePixelRatio));
    const columns = Math.floor(width / (bar + gap));
    const middle = height / 2;
    const playedColor = cssColor(this.wave, "--wave-played");
    const restColor = cssColor(this.wave, "--wave-rest");
    const peaks = this.peaks;
    let top = 0;
    if (peaks) for (const p of peaks) top = Math.max(top, p);
    for (let column = 0; column < columns; column++) {
      let value = 0.04;
      if (peaks && top > 0) {
        const from = Math.floor((column * peaks.length) / columns);
        const to = Math.max(from + 1, Math.floor(((column + 1) * peaks.length) / columns));
        let max = 0;
        for (let i = from; i < to; i++) max = Math.max(max, peaks[i]);
        value = Math.max(0.04, max / top);
      }
      const x = column * (bar + gap);
      const h = Math.max(gap, value * (height - 2));
      g.fillStyle = (x + bar / 2) / width <= played ? playedColor : restColor;
      g.fillRect(x, middle - h / 2, bar, h);
    }
  }

  changed() {
    this.render();
    this.onChange?.(this);
  }

  render() {
    const duration = this.duration;
    const current = this.currentTime();
    const busy = this.playing || this.pendingPlay;
    this.element.classList.toggle("is-playing", this.playing);
    this.element.dataset.playing = String(this.playing);
    this.element.dataset.position = current.toFixed(3);
    this.element.dataset.listenedMs = String(this.listened());
    this.toggleButton.setAttribute("aria-label", `${busy ? "Pause" : "Play"} the ${this.label}`);
    this.toggleButton.setAttribute("aria-pressed", String(busy));
    this.elapsedText.textContent = formatTime(current);
    this.durationText.textContent = formatTime(duration);

    const fraction = duration > 0 ? Math.min(1, current / duration) : 0;
    this.playhead.style.left = `${fraction * 100}%`;
    this.wave.setAttribute("aria-valuemax", duration.toFixed(1));
    this.wave.setAttribute("aria-valuenow", current.toFixed(1));
    this.wave.setAttribute(
      "aria-valuetext",
      `${formatTime(current)} of ${formatTime(duration)}` +
        (this.loop ? `, looping ${formatTime(this.loop.start)} to ${formatTime(this.loop.end)}` : ""),
    );
    this.wave.setAttribute("aria-disabled", String(this.buffer === null));

    const region = this.drag && this.drag.to !== null ? { start: this.drag.from, end: this.drag.to } : this.loop;
    this.loopRegion.hidden = region === null || !(duration > 0);
    if (region && duration > 0) {
      const a = Math.min(region.start, region.end) / duration;
      const b = Math.max(region.start, region.end) / duration;
      this.loopRegion.style.left = `${a * 100}%`;
      this.loopRegion.style.width = `${(b - a) * 100}%`;
    }
    this.loopBar.hidden = this.loop === null;
    if (this.loop) {
      this.loopLabel.textContent = `Looping ${formatTime(this.loop.start, true)}–${formatTime(this.loop.end, true)}`;
      this.element.dataset.loopStart = this.loop.start.toFixed(3);
      this.element.dataset.loopEnd = this.loop.end.toFixed(3);
    } else {
      delete this.element.dataset.loopStart;
      delete this.element.dataset.loopEnd;
    }

    // listening: text first (the bar repeats it for the eye)
    const listened = this.listened() / 1000;
    const need = this.required();
    this.listenBar.hidden = need <= 0;
    if (need > 0) {
      const met = this.ruleMet();
      const share = met ? 100 : Math.min(99, (100 * listened) / need);
      this.listenFill.style.width = `${share}%`;
      this.listenBar.setAttribute("aria-valuenow", share.toFixed(0));
      this.listenBar.setAttribute(
        "aria-valuetext",
        met ? "heard long enough" : `${Math.floor(listened)} of ${Math.ceil(need)} seconds heard`,
      );
      this.listenBar.classList.toggle("is-met", met);
      this.listenedLine.textContent = met
        ? `✓ Heard long enough (${formatTime(listened)})`
        : `Listened ${formatTime(listened)} of ${formatTime(Math.ceil(need))} needed`;
    } else {
      this.listenedLine.textContent = `Listened ${formatTime(listened)}`;
    }
    this.element.classList.toggle("is-heard", need > 0 && this.ruleMet());
    this.draw();
  }
}

/**
 * Level the two clips of a pair (once both are measured): the same loudness, TARGET_LUFS or
 * as close as a quiet clip can be raised safely. Says what it did on each player and, for the
 * current pair, under them.
 */
function levelPair(context, note = null) {
  const players = [context.query, context.candidate];
  if (players.some((player) => player.loading !== null)) return;
  const measured = players.map((player) => player.level);
  if (measured.every((level) => level === null)) {
    if (note) note.textContent = "";
    return;
  }
  const { gains, target, matched } = levelGains(measured);
  players.forEach((player, i) => {
    const db = gains[i];
    const sign = db > 0.05 ? "+" : db < -0.05 ? "−" : "±";
    player.setLevel(db, player.level ? `Level ${sign}${Math.abs(db).toFixed(1)} dB` : "");
  });
  if (!note) return;
  if (!matched) {
    note.textContent = "One clip could not be measured (silent or not loaded): its volume is left as it is.";
  } else if (target < TARGET_LUFS - 1) {
    note.textContent =
      `Both clips play at the same loudness, ${Math.round(TARGET_LUFS - target)} dB quieter than ` +
      "the test sound so that the quieter recording is not distorted.";
  } else {
    note.textContent = "Both clips play at the same loudness, the loudness of the test sound.";
  }
}

// ---------------------------------------------------------------- BROAD + FINE

class ScoreForm {
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
    const clamped = Math.max(0, Math.min(100, Math.round(value)));
    this.slider.value = String(clamped);
    this.fineSet = true;
    this.render();
  }

  nudgeFine(delta) {
    if (!this.fineSet) this.setFine(50);
    else this.setFine(this.fine + delta);
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
    if (broad === null || fine === null) return null;
    const off = (broad === 2 && fine < 40) || (broad === 0 && fine > 60) || (broad === 1 && (fine < 15 || fine > 85));
    if (!off) return null;
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

// ---------------------------------------------------------------- page elements

const panels = new Map($$("[data-panel]", root).map((panel) => [panel.dataset.panel, panel]));
const pauseButton = $("#pause-button");
const helpDialog = $("#help-dialog");
const editDialog = $("#edit-dialog");
const submitButton = $("#submit-button");
const submitHint = $("#submit-hint");
const submitError = $("#submit-error");
const pairNotice = $("#pair-notice");
const practiceBanner = $("#practice-banner");
const listenRule = $("#listen-rule");
const levelsNote = $("#levels-note");
/** The campaign's listening rule as the page was served (the API's pair repeats it). */
const CAMPAIGN_LISTEN_SECONDS = Number(root.dataset.listenSeconds) || 0;

const main = {
  query: new ClipPlayer($("#main-query-player"), { onChange: noteListening }),
  candidate: new ClipPlayer($("#main-candidate-player"), { onChange: noteListening }),
  form: null,
  submit: () => submitJudgment(),
};
main.form = new ScoreForm($("#score-form"), () => {
  submitError.hidden = true;
  updateSubmitState();
});

const edit = {
  query: new ClipPlayer($("#edit-query-player")),
  candidate: new ClipPlayer($("#edit-candidate-player")),
  form: null,
  submit: () => saveRevision(),
  judgment: null,
};
edit.form = new ScoreForm($("#edit-form"), () => {
  $("#edit-error").hidden = true;
});

let current = null; // { pair, clientId, practice }
let submitting = false;
let lastProgress = null;
let waitTimer = null;

function setState(name) {
  root.dataset.state = name;
  for (const [key, panel] of panels) panel.hidden = key !== name;
  pauseButton.disabled = !(name === "pair" || name === "wait");
  if (name !== "wait") stopWaitTimer();
  if (name !== "check") stopTestSound();
  if (name !== "pair") {
    current = null;
    root.dataset.leaseId = "";
    main.query.unload();
    main.candidate.unload();
  }
}

function focusHeading(selector) {
  const heading = $(selector);
  heading?.focus({ preventScroll: true });
}

/** Focus the heading of the visible state, where every shortcut (and Enter) works. */
function restFocus() {
  $(`[data-panel="${root.dataset.state}"] h1`)?.focus({ preventScroll: true });
}

/** 5 -> "5 s", 2.5 -> "2.5 s" (the rule's seconds, rounded up to a tenth). */
function formatSeconds(seconds) {
  const tenths = Math.ceil(seconds * 10 - 1e-6) / 10;
  return `${Number.isInteger(tenths) ? tenths : tenths.toFixed(1)}\u00a0s`;
}

/** "a", "a and b", "a, b and c". */
function joinAnd(parts) {
  return parts.length < 2 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
}

/** The clips of the current pair not yet heard as long as the listening rule asks. */
function unheardClips() {
  if (current === null) return [];
  return [main.query, main.candidate].filter((player) => !player.ruleMet());
}

function listeningNeed(unheard) {
  const seconds = unheard.map((player) => formatSeconds(player.required()));
  if (unheard.length === 2 && seconds[0] === seconds[1]) return `listen to both clips for ${seconds[0]} each`;
  return `listen to ${joinAnd(unheard.map((player, i) => `the ${player.label} for ${seconds[i]}`))}`;
}

function updateSubmitState() {
  const { broad, fine, complete } = main.form;
  const unheard = unheardClips();
  const broken = current !== null && [main.query, main.candidate].some((p) => p.element.dataset.state === "error");
  const ready = complete && unheard.length === 0 && !broken;
  submitButton.disabled = !ready || submitting;
  let hint;
  if (submitting) hint = "Saving…";
  else if (broken) {
    hint =
      "A clip of this pair did not load, so it cannot be judged. Please tell the organizer; Take a break gives the pair back.";
  } else if (ready)
    hint = current?.practice ? "Ready: press Enter to finish the practice." : "Ready: press Enter to submit.";
  else {
    const needs = [];
    if (unheard.length > 0) needs.push(listeningNeed(unheard));
    if (broad === null) needs.push("choose BROAD");
    if (fine === null) needs.push("set FINE");
    hint = `To submit: ${joinAnd(needs)}.`;
  }
  // the hint is a live region: only a real change is written (and so read out)
  if (submitHint.textContent !== hint) submitHint.textContent = hint;
  root.dataset.ready = String(ready);
}

/** A clip of the current pair changed (played, paused, loaded): has it now been heard enough? */
function noteListening(player) {
  if (current !== null && !player.metRule && player.required() > 0 && player.ruleMet()) {
    player.metRule = true;
    announce(`The ${player.label} has been heard long enough.`);
  }
  updateSubmitState();
}

/** Apply a listening rule (seconds, 0 = none) to the current pair and say it. */
function applyRule(seconds) {
  main.query.requiredSeconds = seconds;
  main.candidate.requiredSeconds = seconds;
  listenRule.hidden = seconds <= 0;
  const rule = String(Math.round(seconds * 100) / 100);
  listenRule.textContent =
    seconds > 0
      ? `Listen to each clip for at least ${rule} ${seconds === 1 ? "second" : "seconds"} (or to its end) ` +
        "before you submit: skipping ahead does not count."
      : "";
}

// ---------------------------------------------------------------- progress

function renderProgress(progress) {
  if (!progress) return;
  lastProgress = progress;
  const mine = Number(progress.assessor_judged) || 0;
  const judged = $("#assessor-judged");
  judged.textContent = numberFormat.format(mine);
  judged.dataset.value = String(mine);
  $("#assessor-judged-label").textContent = mine === 1 ? "pair judged by you" : "pairs judged by you";
  $("#pair-number").textContent = numberFormat.format(mine + 1);

  const pairs = Number(progress.campaign_pairs) || 0;
  const done = Number(progress.campaign_judged) || 0;
  const share = pairs > 0 ? Math.min(100, (100 * done) / pairs) : 0;
  $("#campaign-progress-text").textContent = `${numberFormat.format(done)} of ${numberFormat.format(pairs)} pairs`;
  $("#campaign-progress-fill").style.width = `${share}%`;
  const campaignBar = $("#campaign-progress");
  campaignBar.setAttribute("aria-valuenow", share.toFixed(0));
  campaignBar.setAttribute(
    "aria-valuetext",
    `${numberFormat.format(done)} of ${numberFormat.format(pairs)} pairs judged`,
  );

  // Volunteers see how many pairs of systems their work has put in order; the raw ranking
  // confidence (which can dip as evidence arrives) is for the organizers.
  const systemPairs = Number(progress.system_pairs) || 0;
  const settled = Number(progress.system_pairs_settled) || 0;
  const settledBar = $("#settled-progress");
  const settledShare = systemPairs > 0 ? Math.min(100, (100 * settled) / systemPairs) : 0;
  $("#settled-text").textContent =
    systemPairs > 0 ? `${numberFormat.format(settled)} of ${numberFormat.format(systemPairs)}` : "–";
  $("#settled-fill").style.width = `${settledShare}%`;
  settledBar.setAttribute("aria-valuenow", settledShare.toFixed(0));
  settledBar.setAttribute(
    "aria-valuetext",
    `${numberFormat.format(settled)} of ${numberFormat.format(systemPairs)} system pairs settled`,
  );
  $("#settled-note").textContent = progress.can_stop
    ? "The ranking of the systems is known with the confidence the organizers asked for."
    : "Judging stops when the order of the systems is known with enough confidence.";
  settledBar.classList.toggle("is-reached", Boolean(progress.can_stop));
}

// ---------------------------------------------------------------- the loop

async function loadNext({ notice = null } = {}) {
  root.setAttribute("aria-busy", "true");
  let data;
  try {
    data = await api("GET", "next");
  } catch (error) {
    showError(error);
    return;
  } finally {
    root.removeAttribute("aria-busy");
  }
  renderProgress(data.progress);
  if (data.status === "pair" && data.pair) showPair(data.pair, notice);
  else if (data.status === "done") showDone(data.message);
  else showWait();
}

function showPair(pair, notice) {
  const samePair = current !== null && current.pair.lease_id === pair.lease_id;
  setState("pair");
  if (!samePair || current === null) {
    const now = { pair, clientId: newClientId(), practice: false };
    current = now;
    main.form.reset();
    applyRule(Number(pair.listen_seconds ?? CAMPAIGN_LISTEN_SECONDS) || 0);
    levelsNote.textContent = "Measuring the loudness of the clips…";
    const loads = [main.query.load(pair.query), main.candidate.load(pair.candidate)];
    Promise.all(loads).then(() => {
      if (current === now) levelPair(main, levelsNote);
      updateSubmitState();
    });
  }
  practiceBanner.hidden = true;
  root.dataset.practice = "false";
  root.dataset.leaseId = String(pair.lease_id);
  $("#pair-label").textContent = `query ${pair.query_number}, candidate ${pair.candidate_number}`;
  $("#same-query").hidden = !pair.same_query_as_previous;
  pairNotice.hidden = !notice;
  pairNotice.textContent = notice ?? "";
  updateSubmitState();
  focusHeading("#pair-heading");
  announce(
    (notice ? `${notice} ` : "") + (pair.same_query_as_previous ? "Same query, new candidate." : "New pair loaded."),
  );
}

/** The practice pair: made in the browser, scored like a real one, never sent. */
function showPractice() {
  setState("pair");
  current = { pair: { lease_id: null }, clientId: null, practice: true };
  root.dataset.leaseId = "";
  root.dataset.practice = "true";
  main.form.reset();
  applyRule(CAMPAIGN_LISTEN_SECONDS);
  const clips = practiceClips();
  main.query.loadBuffer(clips.query);
  main.candidate.loadBuffer(clips.candidate);
  levelPair(main, levelsNote);
  practiceBanner.hidden = false;
  $("#pair-label").textContent = "practice, not recorded";
  $("#same-query").hidden = true;
  pairNotice.hidden = true;
  updateSubmitState();
  focusHeading("#pair-heading");
  announce("Practice pair: nothing you do here is recorded.");
}

async function finishPractice() {
  main.query.pause();
  main.candidate.pause();
  current = null;
  announce("Practice finished: nothing was recorded.");
  await loadNext({ notice: "Practice finished: nothing was recorded. This is your first real pair." });
}

// ---------------------------------------------------------------- volume check

const CHECK_KEY = `mtcjudge:volume-checked:${API}`;
let testSource = null;
let testBuffer = null;

function volumeChecked() {
  try {
    return sessionStorage.getItem(CHECK_KEY) === "yes";
  } catch {
    return false; // storage blocked: ask again, it is quick
  }
}

function rememberVolumeChecked() {
  try {
    sessionStorage.setItem(CHECK_KEY, "yes");
  } catch {
    // storage blocked: the check comes back on the next visit
  }
}

function renderCheck() {
  const playing = testSource !== null;
  $("#check-play").setAttribute("aria-pressed", String(playing));
  $("#check-play-text").textContent = playing ? "Stop the test sound" : "Play the test sound";
}

function stopTestSound() {
  const source = testSource;
  if (source === null) return;
  testSource = null;
  source.onended = null;
  try {
    source.stop();
  } catch {
    // already ended
  }
  renderCheck();
}

async function toggleTestSound() {
  if (testSource !== null) {
    stopTestSound();
    return;
  }
  const ctx = audioContext();
  testBuffer ??= testSound();
  const source = ctx.createBufferSource();
  source.buffer = testBuffer;
  source.connect(ctx.destination);
  source.onended = () => {
    if (testSource === source) {
      testSource = null;
      renderCheck();
    }
  };
  source.start();
  testSource = source;
  root.dataset.testSoundPlayed = "true";
  renderCheck();
  if (!(await resumeAudio())) announce("Your browser blocked the sound: press the button again.");
}

function showCheck() {
  setState("check");
  renderCheck();
  focusHeading("#check-heading");
}

function leaveCheck(practice) {
  rememberVolumeChecked();
  stopTestSound();
  if (practice) showPractice();
  else loadNext();
}

const ENOUGH_JUDGMENTS = "The organizers have enough judgments to rank the systems — thank you!";

function showDone(message = "") {
  setState("done");
  // The API's message says why there is nothing to judge (closed, not open right now, every
  // pair judged); when the ranking is confident enough the page says it in its own words.
  const notOpen = /not open/i.test(message);
  $("#done-heading").textContent = notOpen ? "Not open right now" : "Thank you!";
  $("#done-message").textContent = !notOpen && (lastProgress?.can_stop || !message) ? ENOUGH_JUDGMENTS : message;
  $("#done-icon").hidden = notOpen;
  const mine = lastProgress?.assessor_judged ?? 0;
  $("#done-count").textContent =
    mine > 0 ? `You judged ${numberFormat.format(mine)} ${mine === 1 ? "pair" : "pairs"}.` : "";
  focusHeading("#done-heading");
}

function showWait() {
  setState("wait");
  let remaining = WAIT_SECONDS;
  $("#wait-countdown").textContent = String(remaining);
  stopWaitTimer();
  waitTimer = setInterval(() => {
    remaining -= 1;
    $("#wait-countdown").textContent = String(Math.max(0, remaining));
    if (remaining <= 0) {
      stopWaitTimer();
      loadNext();
    }
  }, 1000);
  focusHeading("#wait-heading");
}

function stopWaitTimer() {
  if (waitTimer !== null) clearInterval(waitTimer);
  waitTimer = null;
}

function showError(error) {
  setState("error");
  $("#error-heading").textContent =
    error instanceof NetworkError ? "We could not reach the server" : "Something went wrong";
  $("#error-detail").textContent =
    error instanceof NetworkError
      ? "Check your connection, then try again. Your saved judgments are safe."
      : error.message;
  focusHeading("#error-heading");
}

function conflictNotice(error) {
  if (error.code === "campaign_closed") return "The campaign has just closed.";
  if (error.status === 410) {
    return "Your time on that pair ran out and it went to someone else, so it needs no score from you. Here is a new one.";
  }
  if (error.code === "pair_unplayable") {
    return "That pair can no longer be played (one of its clips is missing on the server), so it needs no score from you. Here is a new one.";
  }
  if (error.code === "pair_not_leased") {
    return "That pair was no longer yours to judge (perhaps it was finished in another tab). Here is a new one.";
  }
  return "You had already judged that pair (you can revise it under Recent judgments). Here is a new one.";
}

async function postJudgment(body) {
  try {
    return await api("POST", "judgments", body);
  } catch (error) {
    // One retry with the same client_id: if the first attempt did reach the server,
    // the API recognises the id and answers with the stored judgment.
    if (!(error instanceof NetworkError)) throw error;
    await sleep(RETRY_DELAY_MS);
    return api("POST", "judgments", body);
  }
}

async function submitJudgment() {
  if (submitting || current === null) return;
  updateSubmitState(); // a clip may have reached the rule since the last tick
  if (submitButton.disabled) {
    submitHint.classList.remove("is-nudged");
    void submitHint.offsetWidth; // restart the highlight animation
    submitHint.classList.add("is-nudged");
    announce(submitHint.textContent);
    return;
  }
  if (current.practice) {
    await finishPractice();
    return;
  }
  submitting = true;
  updateSubmitState();
  main.query.pause();
  main.candidate.pause();
  const body = {
    lease_id: current.pair.lease_id,
    broad: main.form.broad,
    fine: main.form.fine,
    client_id: current.clientId,
    query_listen_ms: main.query.listened(),
    candidate_listen_ms: main.candidate.listened(),
  };
  let notice = null;
  try {
    const result = await postJudgment(body);
    renderProgress(result?.progress);
    rememberJudgment(result?.judgment);
    announce("Judgment saved.");
  } catch (error) {
    if (error instanceof ApiError && (error.status === 409 || error.status === 410)) {
      notice = conflictNotice(error);
      // another tab may have judged it: show the list the notice refers to
      await refreshHistory();
    } else {
      submitting = false;
      updateSubmitState();
      submitError.textContent =
        error instanceof NetworkError
          ? "Could not reach the server. Your scores are still here: press Enter to try again."
          : error.message;
      submitError.hidden = false;
      return;
    }
  }
  submitting = false;
  current = null;
  await loadNext({ notice });
}

async function takeBreak() {
  main.query.pause();
  main.candidate.pause();
  stopWaitTimer();
  try {
    await api("POST", "pause");
  } catch (error) {
    // The lease expires on its own; the assessor should still be able to walk away.
    console.warn("pause failed", error);
  }
  setState("paused");
  focusHeading("#paused-heading");
}

// ---------------------------------------------------------------- recent judgments

const HISTORY_SIZE = 10;
let historyItems = [];

async function refreshHistory() {
  let data;
  try {
    data = await api("GET", "history");
  } catch {
    return;
  }
  historyItems = Array.isArray(data) ? data : (data?.judgments ?? []);
  renderHistory();
}

// The answers to POST and PUT carry the stored judgment: the list is updated from them
// rather than fetched again.
function rememberJudgment(judgment) {
  if (!judgment) return;
  const known = historyItems.some((item) => item.id === judgment.id);
  historyItems = known
    ? historyItems.map((item) => (item.id === judgment.id ? judgment : item))
    : [judgment, ...historyItems].slice(0, HISTORY_SIZE);
  renderHistory();
}

function renderHistory() {
  const judgments = historyItems;
  const list = $("#history-list");
  list.replaceChildren(
    ...judgments.map((judgment) => {
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
    }),
  );
  $("#history-empty").hidden = judgments.length > 0;
}

let editedId = null;
let editByPointer = false;

function openRevision(judgment, byPointer) {
  edit.judgment = judgment;
  editedId = judgment.id;
  editByPointer = byPointer;
  main.query.pause();
  main.candidate.pause();
  edit.form.fill(judgment.broad, judgment.fine);
  Promise.all([edit.query.load(judgment.query), edit.candidate.load(judgment.candidate)]).then(() => {
    if (edit.judgment === judgment) levelPair(edit);
  });
  $("#edit-when").textContent =
    `Judged ${formatAgo(judgment.created_at)}. Listen again if you like, then change the scores.`;
  $("#edit-error").hidden = true;
  editDialog.showModal();
}

function closeRevision() {
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

async function saveRevision() {
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
    const result = await api("PUT", `judgments/${encodeURIComponent(judgment.id)}`, {
      broad: edit.form.broad,
      fine: edit.form.fine,
    });
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

// ---------------------------------------------------------------- keyboard

function isTyping(target) {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["range", "radio", "checkbox", "button", "submit", "reset"].includes(target.type);
  }
  return false;
}

/** The clip the seek and loop keys act on: the one playing, else the last one used. */
function activePlayer(context) {
  const { query, candidate } = context;
  if (query.playing || candidate.playing) return query.playing ? query : candidate;
  return candidate.touchedAt > query.touchedAt ? candidate : query;
}

function activeContext() {
  if (editDialog.open) return edit;
  if (root.dataset.state === "pair" && current !== null) return main;
  return null;
}

let helpByPointer = false;

function toggleHelp(byPointer = false) {
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

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (isTyping(target)) return;

  if (event.key === "?") {
    event.preventDefault();
    toggleHelp();
    return;
  }
  if (helpDialog.open) return; // Esc closes it natively

  const context = activeContext();
  if (context === null) return;
  const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
  switch (key) {
    case "1":
    case "2":
    case "3":
      event.preventDefault();
      context.form.broad = Number(key) - 1;
      break;
    case "q":
      event.preventDefault();
      if (event.shiftKey) context.query.restart();
      else context.query.toggle();
      break;
    case "c":
      event.preventDefault();
      if (event.shiftKey) context.candidate.restart();
      else context.candidate.toggle();
      break;
    case "j":
    case "l":
      event.preventDefault();
      activePlayer(context).seekBy((key === "j" ? -1 : 1) * (event.shiftKey ? SEEK_BIG_STEP : SEEK_STEP));
      break;
    case "a":
    case "b":
      event.preventDefault();
      activePlayer(context).markLoop(key === "a" ? "start" : "end");
      break;
    case "x":
      event.preventDefault();
      activePlayer(context).clearLoop();
      break;
    case "ArrowLeft":
    case "ArrowRight": {
      // (a focused waveform has taken its arrows already: they seek that clip)
      event.preventDefault();
      const step = event.shiftKey ? 10 : 1;
      context.form.nudgeFine(key === "ArrowLeft" ? -step : step);
      break;
    }
    case "Enter":
      // Enter submits, also from a player's buttons (Space presses them); elsewhere a focused
      // button or link keeps its own meaning (edit, take a break, ...).
      if (
        !(target instanceof Element && target.closest(".player")) &&
        ((target instanceof HTMLButtonElement && target.type !== "submit") || target instanceof HTMLAnchorElement)
      ) {
        return;
      }
      event.preventDefault();
      context.submit();
      break;
    default:
  }
});

// ---------------------------------------------------------------- wiring

$("#score-form").addEventListener("submit", (event) => {
  event.preventDefault();
  submitJudgment();
});
$("#edit-form").addEventListener("submit", (event) => {
  event.preventDefault();
  saveRevision();
});
$("#edit-cancel").addEventListener("click", closeRevision);
$("#edit-close").addEventListener("click", closeRevision);
$("#help-button").addEventListener("click", (event) => toggleHelp(event.detail > 0));
// A click on the backdrop (outside the box) closes the help.
helpDialog.addEventListener("click", (event) => {
  if (event.target === helpDialog) helpDialog.close();
});
pauseButton.addEventListener("click", takeBreak);
$("#resume-button").addEventListener("click", () => loadNext());
$("#wait-retry").addEventListener("click", () => {
  stopWaitTimer();
  loadNext();
});
$("#error-retry").addEventListener("click", () => loadNext());
$("#check-play").addEventListener("click", toggleTestSound);
$("#check-yes").addEventListener("click", () => leaveCheck(false));
$("#check-practice").addEventListener("click", () => leaveCheck(true));
// Move the playheads and the listening counts while sound plays.
setInterval(() => {
  for (const player of allPlayers) {
    if (!player.playing) continue;
    player.render();
    if (player === main.query || player === main.candidate) noteListening(player);
  }
}, 100);

async function start() {
  const link = $("#resume-link");
  link.textContent = new URL(link.textContent, window.location.href).href;
  if (root.dataset.state === "done") {
    setState("done");
    try {
      renderProgress(await api("GET", "progress"));
    } catch {
      // the thank-you page stands on its own
    }
    showDone(root.dataset.doneMessage);
    return;
  }
  if (volumeChecked()) {
    await loadNext();
  } else {
    showCheck();
    api("GET", "progress")
      .then(renderProgress)
      .catch(() => {
        // the sidebar fills in with the first pair
      });
  }
  refreshHistory();
}

start();
