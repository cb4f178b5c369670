// Web Audio for the judging page: the page's one AudioContext, decoding a clip from its URL,
// and the sounds made in the browser (the volume check's test sound and the practice pair).
// Measuring a clip (loudness, levelling gains, peaks) is levels.js.
//
// Clips are decoded whole and played from memory (AudioBufferSourceNode): that gives exact
// seeking, sample-accurate loops, a gain per clip and a playing clock that only runs while
// sound is rendered. The CSP (default-src 'self') would block a blob: URL in an <audio>
// element, and the browser-made sounds need no URL at all.

import { ApiError, fetchBytes } from "../lib.js";
import { measureLoudness, TARGET_LUFS } from "./levels.js";

let context = null;

/** The page's AudioContext, made on first use. */
export function audioContext() {
  if (context === null) {
    const Context = window.AudioContext ?? window.webkitAudioContext;
    context = new Context();
    // iOS Safari mutes Web Audio with the ringer switch unless the session says "playback".
    if (navigator.audioSession) navigator.audioSession.type = "playback";
  }
  return context;
}

/** Browsers start an AudioContext suspended until the person does something: resume it. */
export async function resumeAudio() {
  const ctx = audioContext();
  if (ctx.state !== "running") {
    try {
      await ctx.resume();
    } catch {
      // still suspended: the caller reports that nothing plays
    }
  }
  return ctx.state === "running";
}

/** The clips decoded last, by URL: a query heard for the next pair of the query is neither
 * fetched nor decoded again (its URL is the query's, docs/audio.md). */
const decoded = new Map();
const DECODED_KEPT = 3;

/** Fetch a clip (the URL the API gave, as it is) and decode it at the context's rate; the
 * clips of the last few URLs are kept decoded. */
export async function fetchClip(url, signal) {
  const kept = decoded.get(url);
  if (kept !== undefined) {
    decoded.delete(url); // most recently used last
    decoded.set(url, kept);
    return kept;
  }
  const buffer = await fetchAndDecode(url, signal);
  decoded.set(url, buffer);
  while (decoded.size > DECODED_KEPT) decoded.delete(decoded.keys().next().value);
  return buffer;
}

async function fetchAndDecode(url, signal) {
  let data;
  try {
    data = await fetchBytes(url, { signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    if (error instanceof ApiError)
      throw new Error(`The clip could not be downloaded (the server answered ${error.status}).`);
    throw new Error("The clip could not be downloaded: check your connection.");
  }
  try {
    return await audioContext().decodeAudioData(data);
  } catch {
    throw new Error("This browser cannot decode this clip.");
  }
}

// ---------------------------------------------------------------- sounds made here

function newBuffer(seconds) {
  const ctx = audioContext();
  return ctx.createBuffer(1, Math.round(seconds * ctx.sampleRate), ctx.sampleRate);
}

/** Add a note (a few harmonics with an attack and a decay) to a mono buffer. */
function addNote(data, rate, { at, length, frequency, harmonics, decay, amplitude }) {
  const start = Math.round(at * rate);
  const count = Math.min(data.length - start, Math.round(length * rate));
  for (let i = 0; i < count; i++) {
    const t = i / rate;
    const envelope = Math.min(1, t / 0.01) * Math.exp(-t * decay) * Math.min(1, (length - t) / 0.03);
    let value = 0;
    for (const [n, weight] of harmonics) value += weight * Math.sin(2 * Math.PI * frequency * n * t);
    data[start + i] += amplitude * envelope * value;
  }
}

/** Scale a buffer so its integrated loudness is `lufs`. */
function normalise(buffer, lufs) {
  const { loudness } = measureLoudness(buffer);
  const gain = 10 ** ((lufs - loudness) / 20);
  const data = buffer.getChannelData(0);
  for (let i = 0; i < data.length; i++) data[i] *= gain;
  return buffer;
}

/** The volume check's sound: a soft chord, two seconds, at TARGET_LUFS. */
export function testSound() {
  const buffer = newBuffer(2.4);
  const data = buffer.getChannelData(0);
  const rate = buffer.sampleRate;
  for (const frequency of [261.63, 329.63, 392.0, 523.25]) {
    addNote(data, rate, {
      at: 0.05,
      length: 2.3,
      frequency,
      harmonics: [
        [1, 1],
        [2, 0.3],
        [3, 0.1],
      ],
      decay: 0.6,
      amplitude: 0.2,
    });
  }
  return normalise(buffer, TARGET_LUFS);
}

const MELODY = [0, 4, 7, 12, 7, 4, 5, 9, 12, 9, 7, 4, 2, 7, 11, 12];

/**
 * The practice pair, made in the browser: a short tune on a plucked sound (the query) and
 * the same tune a fifth higher on a softer, organ-like sound (the candidate): clearly related,
 * not the same. Each is 6 s long, a little quieter than the target, so levelling shows.
 */
export function practiceClips() {
  const make = (transpose, harmonics, decay, amplitude) => {
    const buffer = newBuffer(6);
    const data = buffer.getChannelData(0);
    MELODY.forEach((step, i) => {
      addNote(data, buffer.sampleRate, {
        at: 0.1 + i * 0.36,
        length: 0.5,
        frequency: 220 * 2 ** ((step + transpose) / 12),
        harmonics,
        decay,
        amplitude,
      });
    });
    return buffer;
  };
  const query = make(
    0,
    [
      [1, 1],
      [2, 0.5],
      [3, 0.3],
      [4, 0.15],
    ],
    5,
    0.2,
  );
  const candidate = make(
    7,
    [
      [1, 1],
      [2, 0.2],
      [4, 0.1],
    ],
    1.5,
    0.08,
  );
  return { query, candidate };
}
