// Measuring a decoded clip: its integrated loudness (ITU-R BS.1770-4, K-weighted and gated)
// and sample peak, the gains that level a query and a candidate, and the peaks its waveform
// draws. Pure: an AudioBuffer, or anything with its sampleRate, length, numberOfChannels and
// getChannelData, in; numbers out; no DOM, no audio context.

/** The loudness every clip is brought to (LUFS), and the test sound plays at. */
export const TARGET_LUFS = -20;
/** The most a quiet clip is raised (dB): beyond it a clip's noise would be raised too. */
export const MAX_BOOST_DB = 12;
/** A raised clip's peaks stay below this level (dBFS), so levelling never clips. */
export const PEAK_CEILING_DB = -1;
/** The height of a waveform's bar where the clip is silent (a share of the tallest). */
export const MIN_BAR = 0.04;

// ---------------------------------------------------------------- loudness

/**
 * The two stages of BS.1770's K-weighting at any sample rate: the bilinear-transform form
 * (libebur128's) of the standard's filters, which gives its published 48 kHz coefficients.
 */
function kWeighting(rate) {
  let K = Math.tan((Math.PI * 1681.974450955533) / rate);
  let Q = 0.7071752369554196;
  const Vh = 10 ** (3.999843853973347 / 20);
  const Vb = Vh ** 0.4996667741545416;
  let a0 = 1 + K / Q + K * K;
  const shelf = {
    b: [(Vh + (Vb * K) / Q + K * K) / a0, (2 * (K * K - Vh)) / a0, (Vh - (Vb * K) / Q + K * K) / a0],
    a: [1, (2 * (K * K - 1)) / a0, (1 - K / Q + K * K) / a0],
  };
  K = Math.tan((Math.PI * 38.13547087602444) / rate);
  Q = 0.5003270373238773;
  a0 = 1 + K / Q + K * K;
  const highpass = { b: [1, -2, 1], a: [1, (2 * (K * K - 1)) / a0, (1 - K / Q + K * K) / a0] };
  return [shelf, highpass];
}

function filterInPlace(samples, { b, a }) {
  let x1 = 0;
  let x2 = 0;
  let y1 = 0;
  let y2 = 0;
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i];
    const y = b[0] * x + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2;
    x2 = x1;
    x1 = x;
    y2 = y1;
    y1 = y;
    samples[i] = y;
  }
}

/**
 * Integrated loudness (LUFS) and sample peak of an AudioBuffer, after ITU-R BS.1770-4: the
 * K-weighting filter (a +4 dB shelf above ~1.7 kHz and a 38 Hz high-pass), 400 ms blocks every 100 ms, an absolute gate at -70 LUFS
 * and a relative gate 10 LU below the ungated mean. Channels count equally (mono, stereo).
 * -Infinity for a silent clip.
 */
export function measureLoudness(buffer) {
  const rate = buffer.sampleRate;
  const [shelf, highpass] = kWeighting(rate);
  const step = Math.max(1, Math.round(rate * 0.1));
  const segments = Math.max(1, Math.ceil(buffer.length / step));
  const energy = new Float64Array(segments); // sum over channels of the squares per 100 ms
  let peak = 0;
  for (let channel = 0; channel < buffer.numberOfChannels; channel++) {
    const raw = buffer.getChannelData(channel);
    for (let i = 0; i < raw.length; i++) {
      const v = Math.abs(raw[i]);
      if (v > peak) peak = v;
    }
    const samples = Float64Array.from(raw);
    filterInPlace(samples, shelf);
    filterInPlace(samples, highpass);
    for (let i = 0; i < samples.length; i++) energy[Math.floor(i / step)] += samples[i] * samples[i];
  }
  // 400 ms blocks (4 segments) with 75 % overlap; a clip shorter than a block is one block
  const perBlock = Math.min(4, segments);
  const blocks = [];
  for (let start = 0; start + perBlock <= segments; start++) {
    let sum = 0;
    for (let k = 0; k < perBlock; k++) sum += energy[start + k];
    const samplesInBlock = Math.min(perBlock * step, buffer.length - start * step);
    blocks.push(sum / samplesInBlock);
  }
  const lufs = (meanSquare) => -0.691 + 10 * Math.log10(meanSquare);
  const mean = (values) => values.reduce((s, v) => s + v, 0) / values.length;
  const loud = blocks.filter((z) => z > 0 && lufs(z) > -70);
  if (loud.length === 0) return { loudness: Number.NEGATIVE_INFINITY, peak };
  const relativeGate = lufs(mean(loud)) - 10;
  const gated = loud.filter((z) => lufs(z) > relativeGate);
  return { loudness: lufs(mean(gated)), peak };
}

/**
 * The gains (dB) that play two measured clips at the same loudness: TARGET_LUFS, or lower
 * when one of them cannot be raised that far (by more than MAX_BOOST_DB, or past
 * PEAK_CEILING_DB). A clip whose loudness is unknown or silent keeps 0 dB, and then the other
 * is brought to TARGET_LUFS. Returns {gains: [dB, dB], target, matched}.
 */
export function levelGains(levels) {
  const known = levels.map((level) => level !== null && Number.isFinite(level?.loudness));
  const reach = levels.map((level, i) => {
    if (!known[i]) return Number.POSITIVE_INFINITY;
    const headroom = PEAK_CEILING_DB - 20 * Math.log10(Math.max(level.peak, 1e-9));
    return level.loudness + Math.min(MAX_BOOST_DB, headroom);
  });
  const target = Math.min(TARGET_LUFS, ...reach);
  const gains = levels.map((level, i) => (known[i] ? target - level.loudness : 0));
  return { gains, target, matched: known.every(Boolean) };
}

// ---------------------------------------------------------------- peaks

/** The largest absolute sample of each of `bins` equal slices of the clip (all channels). */
export function measurePeaks(buffer, bins = 1200) {
  const peaks = new Float32Array(bins);
  const length = buffer.length;
  for (let channel = 0; channel < buffer.numberOfChannels; channel++) {
    const data = buffer.getChannelData(channel);
    for (let bin = 0; bin < bins; bin++) {
      const start = Math.floor((bin * length) / bins);
      const end = Math.max(start + 1, Math.floor(((bin + 1) * length) / bins));
      let max = peaks[bin];
      for (let i = start; i < end && i < length; i++) {
        const v = Math.abs(data[i]);
        if (v > max) max = v;
      }
      peaks[bin] = max;
    }
  }
  return peaks;
}

/**
 * The height of each of `columns` waveform bars, as a share of the loudest peak: the largest
 * of the `peaks` in its slice, MIN_BAR at least (and everywhere, without peaks or in silence).
 */
export function barHeights(peaks, columns) {
  let top = 0;
  if (peaks) for (const p of peaks) top = Math.max(top, p);
  const heights = [];
  for (let column = 0; column < columns; column++) {
    let value = MIN_BAR;
    if (peaks && top > 0) {
      const from = Math.floor((column * peaks.length) / columns);
      const to = Math.max(from + 1, Math.floor(((column + 1) * peaks.length) / columns));
      let max = 0;
      for (let i = from; i < to; i++) max = Math.max(max, peaks[i]);
      value = Math.max(MIN_BAR, max / top);
    }
    heights.push(value);
  }
  return heights;
}

// ---------------------------------------------------------------- stored at import

/** The server's measure of a clip (its API `peaks`, 0-255, and `loudness_lufs`), as
 * measureLoudness gives it: {loudness, peak}; null when the server has none, and the page
 * measures the decoded clip instead. */
export function storedLevel(clip) {
  const peaks = clip?.peaks;
  if (!Number.isFinite(clip?.loudness_lufs) || !Array.isArray(peaks) || peaks.length === 0) return null;
  return { loudness: clip.loudness_lufs, peak: Math.max(...peaks) / 255 };
}

/** The server's waveform peaks of a clip, in [0, 1]; null when it has none. */
export function storedPeaks(clip) {
  const peaks = clip?.peaks;
  if (!Array.isArray(peaks) || peaks.length === 0) return null;
  return Float32Array.from(peaks, (value) => value / 255);
}
