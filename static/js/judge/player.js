// One clip on the judging page: decoded from its URL (or made in the browser), played through
// a GainNode that levels it, with its play/pause and restart buttons, its times, its optional
// loop, its listening count and status line; its waveform is waveform.js.

import { $, $$ } from "../lib.js";
import { audioContext, fetchClip, resumeAudio } from "./audio.js";
import { formatGain, formatTime } from "./format.js";
import { levelGains, measureLoudness, measurePeaks, storedLevel, storedPeaks, TARGET_LUFS } from "./levels.js";
import { announce, releaseFocusAfterPointer, restFocus } from "./page.js";
import { heardEnough, listeningStatus, requiredSeconds } from "./rules.js";
import { heardSeconds, loopBetween, MIN_LOOP, markedLoop, playStart, positionAfter } from "./timeline.js";
import { Waveform } from "./waveform.js";

/** Every player of the page: one plays at a time. */
const allPlayers = new Set();

/**
 * One clip, with an optional loop region. `listened()` is the time sound was actually
 * rendered (the audio clock while playing: seeking adds nothing, a loop counts each time it
 * plays). `onChange(player)` is called when it starts, stops, seeks or loops.
 */
export class ClipPlayer {
  constructor(element, { onChange } = {}) {
    this.element = element;
    this.onChange = onChange;
    this.label = $(".player__label", element).textContent.trim().toLowerCase();
    this.toggleButton = $('[data-action="toggle"]', element);
    this.restartButton = $('[data-action="restart"]', element);
    this.loopBar = $('[data-role="loopbar"]', element);
    this.loopLabel = $('[data-role="loop-label"]', element);
    this.elapsedText = $('[data-role="elapsed"]', element);
    this.durationText = $('[data-role="duration"]', element);
    this.listenedLine = $('[data-role="listened-line"]', element);
    this.listenBar = $('[data-role="listen-bar"]', element);
    this.listenFill = $('[data-role="listen-fill"]', element);
    this.levelText = $('[data-role="level"]', element);
    this.statusText = $('[data-role="status"]', element);
    this.waveform = new Waveform(element, this);
    this.gain = null;
    this.ruleSeconds = 0; // the listening rule applied to this clip (0: none)
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
      else this.waveform.focus();
    });
  }

  reset() {
    this.buffer = null;
    this.stored = null; // {level, peaks} the server measured at import (null: measure here)
    this.source = null;
    this.playing = false;
    this.startedAt = 0; // the audio clock when the current source started
    this.startOffset = 0; // where in the clip it started
    this.position = 0; // while paused
    this.listenedSeconds = 0;
    this.loop = null; // {start, end} in seconds
    this.waveform.reset();
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

  // ------------------------------------------------ loading

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
    // measured at import: the waveform is drawn at once and the clip is not measured again
    this.stored = { level: storedLevel(clip), peaks: storedPeaks(clip) };
    if (this.stored.peaks) {
      this.waveform.peaks = this.stored.peaks;
      this.waveform.draw();
    }
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
    this.level = this.stored?.level ?? measureLoudness(buffer);
    this.waveform.peaks = this.stored?.peaks ?? measurePeaks(buffer);
    this.element.dataset.state = "ready";
    this.element.dataset.loudness = Number.isFinite(this.level.loudness) ? this.level.loudness.toFixed(2) : "silent";
    this.setStatus("");
    this.waveform.draw();
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
    this.waveform.draw();
    this.render();
  }

  /** Set the clip's gain (dB) and what the page says about it. */
  setLevel(db, text) {
    this.gainDb = db;
    if (this.gain) this.gain.gain.value = 10 ** (db / 20);
    this.element.dataset.gainDb = db.toFixed(2);
    this.levelText.textContent = text;
  }

  /** Make this the clip the seek and loop keys act on, when none plays. */
  touch() {
    this.touchedAt = performance.now();
    for (const player of $$(".player", this.element.parentElement)) {
      player.classList.toggle("is-current", player === this.element);
    }
  }

  // ------------------------------------------------ playing

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
    this.startAt(playStart(this.position, this.loop, this.duration));
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

  /** Seconds the current source has played (0 when none plays). */
  elapsed() {
    return this.playing ? audioContext().currentTime - this.startedAt : 0;
  }

  /** Stop the sound, keeping the position and counting what was heard. */
  stop() {
    this.pendingPlay = false;
    if (!this.playing || this.source === null) return;
    const elapsed = this.elapsed();
    this.position = positionAfter(this.startOffset, elapsed, this.loop, this.duration);
    this.listenedSeconds += heardSeconds(this.startOffset, elapsed, this.loop, this.buffer.duration);
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

  /** The current position in seconds. */
  currentTime() {
    if (!this.playing) return this.position;
    return positionAfter(this.startOffset, this.elapsed(), this.loop, this.duration);
  }

  seek(seconds) {
    if (this.buffer === null) return;
    this.touch();
    const to = Math.max(0, Math.min(this.duration, seconds));
    const wasPlaying = this.playing;
    if (wasPlaying) this.stop();
    this.position = to;
    if (wasPlaying && to < this.duration) this.startAt(to);
    else this.changed();
  }

  seekBy(delta) {
    this.seek(this.currentTime() + delta);
  }

  // ------------------------------------------------ loops

  /** Loop from `start` to `end` (seconds); either may be null: from the start, to the end. */
  setLoop(start, end) {
    if (this.buffer === null) return;
    this.touch();
    const loop = loopBetween(start, end, this.duration);
    if (loop === null) {
      announce(`A loop must last at least ${MIN_LOOP} seconds.`);
      return;
    }
    const wasPlaying = this.playing;
    const at = this.currentTime();
    this.stop();
    this.loop = loop;
    const inside = at >= loop.start && at < loop.end;
    this.position = inside ? at : loop.start;
    if (wasPlaying) this.startAt(this.position);
    else this.changed();
    announce(`The ${this.label} loops from ${formatTime(loop.start, true)} to ${formatTime(loop.end, true)}.`);
  }

  /** A (loop from here) and B (loop until here), for the keyboard. */
  markLoop(edge) {
    if (this.buffer === null) return;
    const [start, end] = markedLoop(edge, this.currentTime(), this.loop);
    this.setLoop(start, end);
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

  // ------------------------------------------------ listening

  /** Milliseconds of sound rendered since the clip was loaded. */
  listened() {
    let seconds = this.listenedSeconds;
    if (this.playing) seconds += heardSeconds(this.startOffset, this.elapsed(), this.loop, this.buffer.duration);
    return Math.round(seconds * 1000);
  }

  /** Seconds of listening the rule asks of this clip (0: no rule). */
  required() {
    return requiredSeconds(this.ruleSeconds, this.duration);
  }

  /** Whether the listening rule is met for this clip (always, without a rule). */
  ruleMet() {
    return heardEnough(this.listened(), this.required());
  }

  // ------------------------------------------------ showing

  setStatus(message) {
    this.statusText.textContent = message;
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
    this.renderLoop();
    this.renderListening();
    this.waveform.render(current, duration);
  }

  renderLoop() {
    this.loopBar.hidden = this.loop === null;
    if (this.loop) {
      this.loopLabel.textContent = `Looping ${formatTime(this.loop.start, true)}–${formatTime(this.loop.end, true)}`;
      this.element.dataset.loopStart = this.loop.start.toFixed(3);
      this.element.dataset.loopEnd = this.loop.end.toFixed(3);
    } else {
      delete this.element.dataset.loopStart;
      delete this.element.dataset.loopEnd;
    }
  }

  /** The listening line, and the bar when a rule applies (text first: the bar repeats it for the eye). */
  renderListening() {
    const listenedMs = this.listened();
    const need = this.required();
    const met = heardEnough(listenedMs, need);
    const status = listeningStatus(listenedMs / 1000, need, met);
    this.listenBar.hidden = need <= 0;
    if (need > 0) {
      this.listenFill.style.width = `${status.share}%`;
      this.listenBar.setAttribute("aria-valuenow", status.share.toFixed(0));
      this.listenBar.setAttribute("aria-valuetext", status.valueText);
      this.listenBar.classList.toggle("is-met", met);
    }
    this.listenedLine.textContent = status.line;
    this.element.classList.toggle("is-heard", need > 0 && met);
  }
}

/** Pause every clip of the page. */
export function pauseAll() {
  for (const player of allPlayers) player.pause();
}

/** Every 100 ms, move the playheads and listening counts of the clips that play; then `onTick(player)`. */
export function startClock(onTick) {
  setInterval(() => {
    for (const player of allPlayers) {
      if (!player.playing) continue;
      player.render();
      onTick(player);
    }
  }, 100);
}

/**
 * Level the two clips of a pair (once both are measured): the same loudness, TARGET_LUFS or
 * as close as a quiet clip can be raised safely. Says what it did on each player and, in
 * `note` (for the pair on screen), under them.
 */
export function levelPair(context, note = null) {
  const players = [context.query, context.candidate];
  if (players.some((player) => player.loading !== null)) return;
  const measured = players.map((player) => player.level);
  if (measured.every((level) => level === null)) {
    if (note) note.textContent = "";
    return;
  }
  const { gains, target, matched } = levelGains(measured);
  players.forEach((player, i) => {
    player.setLevel(gains[i], player.level ? `Level ${formatGain(gains[i])}` : "");
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
