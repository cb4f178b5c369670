// What a pair asks before Submit (static/js/judge/rules.js): the listening rule, the scores, the hint.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  clampFine,
  heardEnough,
  listeningNeed,
  listeningStatus,
  nudgedFine,
  requiredSeconds,
  ruleText,
  scoresDisagree,
  submitHint,
} from "../../static/js/judge/rules.js";

const S = "\u00a0s";

describe("requiredSeconds", () => {
  test("no rule asks nothing", () => {
    assert.equal(requiredSeconds(0, 30), 0);
    assert.equal(requiredSeconds(-1, 30), 0);
  });

  test("the rule, or the whole clip when it is shorter", () => {
    assert.equal(requiredSeconds(5, 30), 5);
    assert.equal(requiredSeconds(5, 3), 3);
    assert.equal(requiredSeconds(5, 5), 5);
  });

  test("a clip of unknown duration: the rule", () => {
    assert.equal(requiredSeconds(5, 0), 5);
  });
});

describe("heardEnough", () => {
  test("to the millisecond", () => {
    assert.equal(heardEnough(4999, 5), false);
    assert.equal(heardEnough(5000, 5), true);
    assert.equal(heardEnough(2499, 2.5), false);
    assert.equal(heardEnough(2500, 2.5), true);
  });

  test("the need is rounded to a millisecond", () => {
    assert.equal(heardEnough(1000, 1.0004), true);
    assert.equal(heardEnough(1000, 1.0006), false);
  });

  test("always, without a need", () => {
    assert.equal(heardEnough(0, 0), true);
    assert.equal(heardEnough(0, -1), true);
  });
});

describe("ruleText", () => {
  test("none without a rule", () => {
    assert.equal(ruleText(0), "");
  });

  test("one second, seconds, at most two decimals", () => {
    const tail = " (or to its end) before you submit: skipping ahead does not count.";
    assert.equal(ruleText(1), `Listen to each clip for at least 1 second${tail}`);
    assert.equal(ruleText(2.5), `Listen to each clip for at least 2.5 seconds${tail}`);
    assert.equal(ruleText(10 / 3), `Listen to each clip for at least 3.33 seconds${tail}`);
  });
});

describe("listeningStatus", () => {
  test("without a rule: the time heard", () => {
    assert.deepEqual(listeningStatus(3.2, 0, true), { line: "Listened 0:03" });
    assert.deepEqual(listeningStatus(75, 0, true), { line: "Listened 1:15" });
  });

  test("under a rule: the share (below 100 until met), whole seconds heard of those needed", () => {
    assert.deepEqual(listeningStatus(2, 5, false), {
      line: "Listened 0:02 of 0:05 needed",
      share: 40,
      valueText: "2 of 5 seconds heard",
    });
    assert.deepEqual(listeningStatus(1.5, 2.5, false), {
      line: "Listened 0:01 of 0:03 needed",
      share: 60,
      valueText: "1 of 3 seconds heard",
    });
    assert.equal(listeningStatus(4.99, 5, false).share, 99);
  });

  test("met", () => {
    assert.deepEqual(listeningStatus(5.4, 5, true), {
      line: "✓ Heard long enough (0:05)",
      share: 100,
      valueText: "heard long enough",
    });
  });
});

describe("listeningNeed", () => {
  const query = (required) => ({ label: "query clip", required });
  const candidate = (required) => ({ label: "candidate clip", required });

  test("both clips for the same time", () => {
    assert.equal(listeningNeed([query(5), candidate(5)]), `listen to both clips for 5${S} each`);
    // the same once written: 2.41 and 2.5 both read 2.5 s
    assert.equal(listeningNeed([query(2.41), candidate(2.5)]), `listen to both clips for 2.5${S} each`);
  });

  test("each clip for its own time", () => {
    assert.equal(
      listeningNeed([query(5), candidate(3)]),
      `listen to the query clip for 5${S} and the candidate clip for 3${S}`,
    );
    assert.equal(listeningNeed([candidate(2.5)]), `listen to the candidate clip for 2.5${S}`);
  });
});

describe("FINE", () => {
  test("clampFine: a whole number from 0 to 100", () => {
    assert.equal(clampFine(-3), 0);
    assert.equal(clampFine(101), 100);
    assert.equal(clampFine(49.4), 49);
    assert.equal(clampFine(49.5), 50);
    assert.equal(clampFine(0), 0);
    assert.equal(clampFine(100), 100);
  });

  test("nudgedFine: 50 the first time, then moved within 0 to 100", () => {
    assert.equal(nudgedFine(null, 10), 50);
    assert.equal(nudgedFine(null, -1), 50);
    assert.equal(nudgedFine(50, -1), 49);
    assert.equal(nudgedFine(95, 10), 100);
    assert.equal(nudgedFine(3, -10), 0);
  });
});

describe("scoresDisagree", () => {
  test("very similar under 40, not similar over 60, somewhat similar outside 15 to 85", () => {
    assert.equal(scoresDisagree(2, 39), true);
    assert.equal(scoresDisagree(2, 40), false);
    assert.equal(scoresDisagree(2, 100), false);
    assert.equal(scoresDisagree(0, 61), true);
    assert.equal(scoresDisagree(0, 60), false);
    assert.equal(scoresDisagree(0, 0), false);
    assert.equal(scoresDisagree(1, 14), true);
    assert.equal(scoresDisagree(1, 15), false);
    assert.equal(scoresDisagree(1, 85), false);
    assert.equal(scoresDisagree(1, 86), true);
  });

  test("not while a score is missing", () => {
    assert.equal(scoresDisagree(null, 0), false);
    assert.equal(scoresDisagree(2, null), false);
  });
});

describe("submitHint", () => {
  const base = { submitting: false, broken: false, ready: false, practice: false, unheard: [], broad: 1, fine: 50 };

  test("saving comes first, then a clip that did not load", () => {
    assert.equal(submitHint({ ...base, submitting: true, broken: true }), "Saving…");
    assert.match(submitHint({ ...base, broken: true, ready: true }), /^A clip of this pair did not load/);
  });

  test("ready: Enter submits, or finishes the practice", () => {
    assert.equal(submitHint({ ...base, ready: true }), "Ready: press Enter to submit.");
    assert.equal(submitHint({ ...base, ready: true, practice: true }), "Ready: press Enter to finish the practice.");
  });

  test("what is missing, listening first", () => {
    const unheard = [
      { label: "query clip", required: 5 },
      { label: "candidate clip", required: 5 },
    ];
    assert.equal(
      submitHint({ ...base, unheard, broad: null, fine: null }),
      `To submit: listen to both clips for 5${S} each, choose BROAD and set FINE.`,
    );
    assert.equal(submitHint({ ...base, fine: null }), "To submit: set FINE.");
    assert.equal(submitHint({ ...base, broad: null }), "To submit: choose BROAD.");
    assert.equal(
      submitHint({ ...base, unheard: unheard.slice(1) }),
      `To submit: listen to the candidate clip for 5${S}.`,
    );
  });
});
