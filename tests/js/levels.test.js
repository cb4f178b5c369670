// Measuring a clip (static/js/judge/levels.js): loudness after ITU-R BS.1770-4, the levelling
// gains, the peaks and the waveform's bars. The clips are plain objects shaped like an
// AudioBuffer.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  barHeights,
  levelGains,
  MAX_BOOST_DB,
  MIN_BAR,
  measureLoudness,
  measurePeaks,
  PEAK_CEILING_DB,
  storedLevel,
  storedPeaks,
  TARGET_LUFS,
} from "../../static/js/judge/levels.js";

function clip(sampleRate, ...channels) {
  const data = channels.map((samples) => Float32Array.from(samples));
  return {
    sampleRate,
    length: data[0].length,
    numberOfChannels: data.length,
    getChannelData: (channel) => data[channel],
  };
}

function sine(sampleRate, seconds, hz, amplitude) {
  return Array.from(
    { length: Math.round(sampleRate * seconds) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / sampleRate),
  );
}

const near = (actual, expected, tolerance, what) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);

describe("measureLoudness", () => {
  test("the standard's reference: a full-scale 997 Hz sine on one channel is −3.01 LUFS", () => {
    const { loudness, peak } = measureLoudness(clip(48000, sine(48000, 3, 997, 1)));
    near(loudness, -3.01, 0.01, "loudness");
    near(peak, 1, 1e-6, "peak");
  });

  test("20 dB quieter is 20 LU lower, at 48 kHz and at 44.1 kHz", () => {
    near(measureLoudness(clip(48000, sine(48000, 3, 997, 0.1))).loudness, -23.01, 0.01, "48 kHz");
    near(measureLoudness(clip(44100, sine(44100, 3, 997, 0.1))).loudness, -23.01, 0.01, "44.1 kHz");
  });

  test("channels add up: the same sine on two channels is 3.01 LU louder", () => {
    const tone = sine(48000, 3, 997, 0.1);
    near(measureLoudness(clip(48000, tone, tone)).loudness, -20.0, 0.01, "stereo");
  });

  test("K-weighting: highs count more than 1 kHz, deep lows much less", () => {
    const at = (hz) => measureLoudness(clip(48000, sine(48000, 3, hz, 0.1))).loudness;
    const reference = at(997);
    const high = at(5000) - reference;
    assert.ok(high > 3 && high < 4, `5 kHz: ${high} LU`);
    assert.ok(at(20) - reference < -10, "20 Hz");
  });

  test("the relative gate leaves out a quiet half", () => {
    // 2 s at −23 LUFS then 2 s at −63 LUFS: above the absolute gate, 10 LU below the mean.
    // Left: 17 blocks of the loud part and the 3 blocks across the change (3/4, 1/2, 1/4 of
    // it), so the mean is 18.5/20 of the loud part's: −23.01 + 10 log10(0.925) = −23.35.
    const loudness = measureLoudness(clip(48000, [...sine(48000, 2, 997, 0.1), ...sine(48000, 2, 997, 0.001)]));
    near(loudness.loudness, -23.35, 0.01, "gated");
  });

  test("a clip shorter than a block is one block", () => {
    near(measureLoudness(clip(48000, sine(48000, 0.2, 997, 0.1))).loudness, -23.01, 0.01, "200 ms");
  });

  test("silence, and sound under the absolute gate (−70 LUFS), are −Infinity", () => {
    assert.deepEqual(measureLoudness(clip(48000, new Array(48000).fill(0))), {
      loudness: Number.NEGATIVE_INFINITY,
      peak: 0,
    });
    const faint = measureLoudness(clip(48000, sine(48000, 3, 997, 0.0001)));
    assert.equal(faint.loudness, Number.NEGATIVE_INFINITY);
    near(faint.peak, 0.0001, 1e-9, "peak");
  });

  test("the peak is the largest absolute sample of any channel", () => {
    assert.equal(measureLoudness(clip(8000, [0, 0.25, -0.5], [0.5, -0.75, 0])).peak, 0.75);
  });
});

describe("levelGains", () => {
  test("the constants", () => {
    assert.equal(TARGET_LUFS, -20);
    assert.equal(MAX_BOOST_DB, 12);
    assert.equal(PEAK_CEILING_DB, -1);
  });

  test("both to TARGET_LUFS when both can get there", () => {
    const { gains, target, matched } = levelGains([
      { loudness: -30, peak: 0.01 }, // may rise 12 dB (its peak 39 dB): to −18
      { loudness: -14, peak: 0.9 }, // is lowered
    ]);
    assert.equal(target, -20);
    near(gains[0], 10, 1e-9, "query");
    near(gains[1], -6, 1e-9, "candidate");
    assert.equal(matched, true);
  });

  test("lower, when a quiet clip's peak would pass PEAK_CEILING_DB", () => {
    // a peak of 0.5 is −6.02 dBFS: −26 LUFS rises 5.02 dB at most, to −20.98
    const { gains, target } = levelGains([
      { loudness: -26, peak: 0.5 },
      { loudness: -23, peak: 0.5 },
    ]);
    const headroom = -1 - 20 * Math.log10(0.5);
    near(target, -26 + headroom, 1e-9, "target");
    near(target, -20.9794, 1e-4, "target");
    near(gains[0], 5.0206, 1e-4, "query");
    near(gains[1], 2.0206, 1e-4, "candidate");
  });

  test("lower, when a quiet clip would need more than MAX_BOOST_DB", () => {
    const { gains, target } = levelGains([
      { loudness: -40, peak: 0.01 },
      { loudness: -20, peak: 0.1 },
    ]);
    assert.equal(target, -28);
    assert.deepEqual(gains, [12, -8]);
  });

  test("a clip not measured, or silent, keeps 0 dB and the other goes to the target", () => {
    const missing = levelGains([null, { loudness: -26, peak: 0.1 }]);
    assert.equal(missing.target, -20);
    assert.deepEqual(missing.gains, [0, 6]);
    assert.equal(missing.matched, false);
    const silent = levelGains([
      { loudness: Number.NEGATIVE_INFINITY, peak: 0 },
      { loudness: -17, peak: 0.5 },
    ]);
    assert.deepEqual(silent.gains, [0, -3]);
    assert.equal(silent.matched, false);
  });
});

describe("measurePeaks", () => {
  test("the largest absolute sample of each equal slice", () => {
    const peaks = measurePeaks(clip(8000, [0, 0.5, -0.8, 0.1, 0.2, -0.3]), 3);
    assert.ok(peaks instanceof Float32Array);
    assert.deepEqual([...peaks], [0.5, Math.fround(0.8), Math.fround(0.3)]);
  });

  test("of all channels", () => {
    const peaks = measurePeaks(clip(8000, [0.25, 0, 0, 0], [0, 0, -0.5, 0]), 2);
    assert.deepEqual([...peaks], [0.25, 0.5]);
  });

  test("more bins than samples: each sample fills its bins", () => {
    assert.deepEqual([...measurePeaks(clip(8000, [0.25, -0.75]), 4)], [0.25, 0.25, 0.75, 0.75]);
  });

  test("1200 bins unless asked", () => {
    assert.equal(measurePeaks(clip(8000, new Array(5000).fill(0.5))).length, 1200);
  });
});

describe("barHeights", () => {
  test("each column's largest peak, as a share of the tallest", () => {
    assert.deepEqual(barHeights([0.5, 1, 0.25, 0.1], 2), [1, 0.25]);
    assert.deepEqual(barHeights([0.5, 1, 0.25, 0.2], 4), [0.5, 1, 0.25, 0.2]);
  });

  test("MIN_BAR at least", () => {
    assert.equal(MIN_BAR, 0.04);
    assert.deepEqual(barHeights([0.01, 1], 2), [MIN_BAR, 1]);
  });

  test("without peaks, or in silence: MIN_BAR everywhere", () => {
    assert.deepEqual(barHeights(null, 3), [MIN_BAR, MIN_BAR, MIN_BAR]);
    assert.deepEqual(barHeights(new Float32Array(4), 2), [MIN_BAR, MIN_BAR]);
  });

  test("more columns than peaks: each peak fills its columns", () => {
    assert.deepEqual(barHeights([1, 0.5], 4), [1, 1, 0.5, 0.5]);
  });

  test("no room for a column: none", () => {
    assert.deepEqual(barHeights([1, 0.5], 0), []);
  });
});

describe("storedLevel and storedPeaks: the server's measure of a clip", () => {
  test("read the API's loudness and 0-255 peaks as measureLoudness and measurePeaks give them", () => {
    const clip = { loudness_lufs: -17.5, peaks: [0, 51, 255, 102] };
    assert.deepEqual(storedLevel(clip), { loudness: -17.5, peak: 1 });
    assert.deepEqual(
      Array.from(storedPeaks(clip)),
      [0, 0.2, 1, 0.4].map((v) => Math.fround(v)),
    );
  });

  test("are null when the server has no measure, so the page measures the clip itself", () => {
    for (const clip of [null, {}, { loudness_lufs: null, peaks: [1] }, { loudness_lufs: -20, peaks: [] }]) {
      assert.equal(storedLevel(clip), null);
    }
    assert.equal(storedPeaks({ peaks: null }), null);
    assert.equal(storedPeaks({ loudness_lufs: -20 }), null);
  });

  test("give levelGains what it needs to level two clips", () => {
    const quiet = storedLevel({ loudness_lufs: -30, peaks: [26] }); // peak 0.1: 20 dB of headroom
    const loud = storedLevel({ loudness_lufs: -14, peaks: [230] });
    const { gains, matched } = levelGains([quiet, loud]);
    assert.equal(matched, true);
    assert.ok(gains[0] > 0 && gains[1] < 0);
  });
});
