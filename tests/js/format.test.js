// The judging page's formats (static/js/judge/format.js).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  formatAgo,
  formatCount,
  formatGain,
  formatSeconds,
  formatTime,
  joinAnd,
} from "../../static/js/judge/format.js";

describe("formatTime", () => {
  test("minutes and whole seconds, the seconds on two digits", () => {
    assert.equal(formatTime(83.4), "1:23");
    assert.equal(formatTime(9.99), "0:09");
    assert.equal(formatTime(59.96), "0:59");
    assert.equal(formatTime(3600), "60:00");
  });

  test("precise: tenths, rounded, carrying into the seconds and minutes", () => {
    assert.equal(formatTime(83.4, true), "1:23.4");
    assert.equal(formatTime(12.25, true), "0:12.3");
    assert.equal(formatTime(59.96, true), "1:00.0");
    assert.equal(formatTime(0.04, true), "0:00.0");
  });

  test("nothing to show is 0:00", () => {
    for (const value of [0, -3, Number.NaN, Number.POSITIVE_INFINITY, undefined, null]) {
      assert.equal(formatTime(value), "0:00", String(value));
    }
    assert.equal(formatTime(-1, true), "0:00.0");
  });
});

describe("formatAgo", () => {
  const now = Date.parse("2024-05-01T12:00:00Z");
  const ago = (seconds) => new Date(now - seconds * 1000).toISOString();

  test("just now, under 45 seconds (and for a time in the future)", () => {
    assert.equal(formatAgo(ago(0), now), "just now");
    assert.equal(formatAgo(ago(44.9), now), "just now");
    assert.equal(formatAgo(ago(-120), now), "just now");
  });

  test("minutes, then hours, rounded", () => {
    assert.equal(formatAgo(ago(45), now), "1 min ago");
    assert.equal(formatAgo(ago(600), now), "10 min ago");
    assert.equal(formatAgo(ago(3599), now), "60 min ago");
    assert.equal(formatAgo(ago(3600), now), "1 h ago");
    assert.equal(formatAgo(ago(5400), now), "2 h ago");
    assert.equal(formatAgo(ago(86399), now), "24 h ago");
  });

  test("a day or more: the date", () => {
    const then = now - 2 * 86400 * 1000;
    assert.equal(formatAgo(new Date(then).toISOString(), now), new Date(then).toLocaleDateString());
  });

  test("no date, no text", () => {
    assert.equal(formatAgo("not a date", now), "");
    assert.equal(formatAgo(undefined, now), "");
  });
});

describe("formatSeconds", () => {
  test("whole seconds without decimals, others rounded up to a tenth, with a no-break space", () => {
    assert.equal(formatSeconds(5), "5\u00a0s");
    assert.equal(formatSeconds(30), "30\u00a0s");
    assert.equal(formatSeconds(2.5), "2.5\u00a0s");
    assert.equal(formatSeconds(2.51), "2.6\u00a0s");
    assert.equal(formatSeconds(4.99), "5\u00a0s");
  });

  test("a tenth that floating point writes as a little more is not rounded up", () => {
    const third = 0.1 * 3; // 0.30000000000000004: ten times it is a little over 3
    assert.equal(Math.ceil(third * 10), 4);
    assert.equal(formatSeconds(third), "0.3\u00a0s");
    assert.equal(formatSeconds(0.7), "0.7\u00a0s");
  });
});

describe("joinAnd", () => {
  test("nothing, one, two, three", () => {
    assert.equal(joinAnd([]), "");
    assert.equal(joinAnd(["a"]), "a");
    assert.equal(joinAnd(["a", "b"]), "a and b");
    assert.equal(joinAnd(["a", "b", "c"]), "a, b and c");
  });
});

describe("formatGain", () => {
  test("a sign (a true minus), one decimal, dB", () => {
    assert.equal(formatGain(3.21), "+3.2 dB");
    assert.equal(formatGain(0.06), "+0.1 dB");
    assert.equal(formatGain(-1), "\u22121.0 dB");
    assert.equal(formatGain(-12.04), "\u221212.0 dB");
  });

  test("within 0.05 dB of nothing: ±", () => {
    assert.equal(formatGain(0), "±0.0 dB");
    assert.equal(formatGain(0.04), "±0.0 dB");
    assert.equal(formatGain(-0.04), "±0.0 dB");
  });
});

describe("formatCount", () => {
  test("the browser's number format", () => {
    assert.equal(formatCount(7), "7");
    assert.equal(formatCount(1234567), new Intl.NumberFormat().format(1234567));
  });
});
