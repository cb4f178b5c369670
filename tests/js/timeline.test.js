// A clip's clock (static/js/judge/timeline.js): positions, loops, time heard.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  heardSeconds,
  loopBetween,
  MIN_LOOP,
  markedLoop,
  playStart,
  positionAfter,
  timeAtX,
} from "../../static/js/judge/timeline.js";

const LOOP = { start: 1, end: 3 };

describe("positionAfter", () => {
  test("without a loop: the start plus the time played, up to the end", () => {
    assert.equal(positionAfter(2, 1.5, null, 10), 3.5);
    assert.equal(positionAfter(8, 5, null, 10), 10);
  });

  test("in a loop: wraps back to the loop's start at its end", () => {
    assert.equal(positionAfter(1, 1, LOOP, 10), 2); // not at the end yet
    assert.equal(positionAfter(1, 2.5, LOOP, 10), 1.5); // 3.5 is 0.5 into the second time round
    assert.equal(positionAfter(0, 4, LOOP, 10), 2); // started before the loop: 3 s past its start is once round and 1 s in
    assert.equal(positionAfter(1, 2, LOOP, 10), 1); // exactly at the end: back to the start
  });

  test("a source started after the loop's end plays on to the end", () => {
    assert.equal(positionAfter(5, 1, LOOP, 10), 6);
    assert.equal(positionAfter(5, 9, LOOP, 10), 10);
  });
});

describe("heardSeconds", () => {
  test("without a loop, no more than the rest of the clip", () => {
    assert.equal(heardSeconds(2, 3, null, 10), 3);
    assert.equal(heardSeconds(8, 5, null, 10), 2);
  });

  test("a loop counts every time round", () => {
    assert.equal(heardSeconds(1, 7, LOOP, 10), 7);
  });
});

describe("playStart", () => {
  test("from where it is, or from the start at (or 10 ms before) the end", () => {
    assert.equal(playStart(4, null, 10), 4);
    assert.equal(playStart(9.98, null, 10), 9.98);
    assert.equal(playStart(9.995, null, 10), 0);
    assert.equal(playStart(10, null, 10), 0);
  });

  test("from the loop's start when outside the loop", () => {
    const loop = { start: 2, end: 5 };
    assert.equal(playStart(3, loop, 10), 3);
    assert.equal(playStart(2, loop, 10), 2);
    assert.equal(playStart(1, loop, 10), 2);
    assert.equal(playStart(5, loop, 10), 2);
    assert.equal(playStart(10, loop, 10), 2);
  });
});

describe("loopBetween", () => {
  test("in order, inside the clip", () => {
    assert.deepEqual(loopBetween(1, 3, 10), { start: 1, end: 3 });
    assert.deepEqual(loopBetween(3, 1, 10), { start: 1, end: 3 });
    assert.deepEqual(loopBetween(-1, 12, 10), { start: 0, end: 10 });
  });

  test("an open end: from the start, to the end", () => {
    assert.deepEqual(loopBetween(null, 2, 10), { start: 0, end: 2 });
    assert.deepEqual(loopBetween(8, null, 10), { start: 8, end: 10 });
    assert.deepEqual(loopBetween(undefined, undefined, 10), { start: 0, end: 10 });
  });

  test("shorter than MIN_LOOP: none", () => {
    assert.equal(MIN_LOOP, 0.25);
    assert.deepEqual(loopBetween(1, 1.25, 10), { start: 1, end: 1.25 });
    assert.equal(loopBetween(1, 1.2, 10), null);
    assert.equal(loopBetween(2, 2, 10), null);
    assert.equal(loopBetween(9.9, null, 10), null);
  });
});

describe("markedLoop", () => {
  test("A: from here, to the loop's end when that is later", () => {
    assert.deepEqual(markedLoop("start", 4, null), [4, null]);
    assert.deepEqual(markedLoop("start", 4, { start: 2, end: 6 }), [4, 6]);
    assert.deepEqual(markedLoop("start", 7, { start: 2, end: 6 }), [7, null]);
  });

  test("B: until here, from the loop's start when that is earlier", () => {
    assert.deepEqual(markedLoop("end", 4, null), [0, 4]);
    assert.deepEqual(markedLoop("end", 4, { start: 2, end: 6 }), [2, 4]);
    assert.deepEqual(markedLoop("end", 1, { start: 2, end: 6 }), [0, 1]);
  });
});

describe("timeAtX", () => {
  test("the share of the width, in seconds, clamped to the clip", () => {
    assert.equal(timeAtX(150, 100, 200, 10), 2.5);
    assert.equal(timeAtX(100, 100, 200, 10), 0);
    assert.equal(timeAtX(50, 100, 200, 10), 0);
    assert.equal(timeAtX(300, 100, 200, 10), 10);
    assert.equal(timeAtX(400, 100, 200, 10), 10);
  });

  test("a waveform without width: the start", () => {
    assert.equal(timeAtX(150, 100, 0, 10), 0);
  });
});
