// The judging page's keys (static/js/judge/keys.js).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SEEK_BIG_STEP, SEEK_STEP, shortcut, waveKey } from "../../static/js/judge/keys.js";

describe("shortcut", () => {
  test("? opens the help", () => {
    assert.deepEqual(shortcut("?", true), { do: "help" });
  });

  test("1, 2, 3 choose BROAD 0, 1, 2; no other digit", () => {
    assert.deepEqual(shortcut("1", false), { do: "broad", value: 0 });
    assert.deepEqual(shortcut("2", false), { do: "broad", value: 1 });
    assert.deepEqual(shortcut("3", false), { do: "broad", value: 2 });
    assert.equal(shortcut("0", false), null);
    assert.equal(shortcut("4", false), null);
    assert.equal(shortcut("!", true), null); // Shift+1 on a US layout
  });

  test("Q and C play or pause a clip; with Shift, from the start", () => {
    assert.deepEqual(shortcut("q", false), { do: "toggle", clip: "query" });
    assert.deepEqual(shortcut("Q", true), { do: "restart", clip: "query" });
    assert.deepEqual(shortcut("c", false), { do: "toggle", clip: "candidate" });
    assert.deepEqual(shortcut("C", true), { do: "restart", clip: "candidate" });
    assert.deepEqual(shortcut("Q", false), { do: "toggle", clip: "query" }); // Caps Lock
  });

  test("J and L seek back and on, by the big step with Shift", () => {
    assert.equal(SEEK_STEP, 1);
    assert.equal(SEEK_BIG_STEP, 5);
    assert.deepEqual(shortcut("j", false), { do: "seek", by: -1 });
    assert.deepEqual(shortcut("J", true), { do: "seek", by: -5 });
    assert.deepEqual(shortcut("l", false), { do: "seek", by: 1 });
    assert.deepEqual(shortcut("L", true), { do: "seek", by: 5 });
  });

  test("A and B mark a loop, X clears it", () => {
    assert.deepEqual(shortcut("a", false), { do: "mark", edge: "start" });
    assert.deepEqual(shortcut("B", true), { do: "mark", edge: "end" });
    assert.deepEqual(shortcut("x", false), { do: "clear-loop" });
  });

  test("← → move FINE by 1, by 10 with Shift", () => {
    assert.deepEqual(shortcut("ArrowLeft", false), { do: "fine", by: -1 });
    assert.deepEqual(shortcut("ArrowLeft", true), { do: "fine", by: -10 });
    assert.deepEqual(shortcut("ArrowRight", false), { do: "fine", by: 1 });
    assert.deepEqual(shortcut("ArrowRight", true), { do: "fine", by: 10 });
  });

  test("Enter submits; other keys do nothing", () => {
    assert.deepEqual(shortcut("Enter", false), { do: "submit" });
    for (const key of ["Escape", " ", "Tab", "ArrowUp", "PageUp", "z", "Shift"]) {
      assert.equal(shortcut(key, false), null, key);
    }
  });
});

describe("waveKey", () => {
  test("arrows seek by a step, by the big step with Shift", () => {
    assert.deepEqual(waveKey("ArrowLeft", false), { do: "seek", by: -1 });
    assert.deepEqual(waveKey("ArrowDown", true), { do: "seek", by: -5 });
    assert.deepEqual(waveKey("ArrowUp", false), { do: "seek", by: 1 });
    assert.deepEqual(waveKey("ArrowRight", true), { do: "seek", by: 5 });
  });

  test("Page Up and Page Down: the big step, Shift or not", () => {
    assert.deepEqual(waveKey("PageDown", false), { do: "seek", by: -5 });
    assert.deepEqual(waveKey("PageUp", true), { do: "seek", by: 5 });
  });

  test("Space, Home, End", () => {
    assert.deepEqual(waveKey(" ", false), { do: "toggle" });
    assert.deepEqual(waveKey("Home", false), { do: "home" });
    assert.deepEqual(waveKey("End", true), { do: "end" });
  });

  test("other keys are left to the page", () => {
    for (const key of ["a", "Enter", "q", "toString", "constructor"]) assert.equal(waveKey(key, false), null, key);
  });
});
