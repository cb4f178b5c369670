// The side panel's and the closing panel's data (static/js/judge/summary.js).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  doneWords,
  ENOUGH_JUDGMENTS,
  HISTORY_SIZE,
  historyFrom,
  percent,
  progressFigures,
  withJudgment,
} from "../../static/js/judge/summary.js";

describe("percent", () => {
  test("a share of 100, capped; 0 without a whole", () => {
    assert.equal(percent(1, 4), 25);
    assert.equal(percent(1, 3), 100 / 3);
    assert.equal(percent(5, 4), 100);
    assert.equal(percent(0, 0), 0);
    assert.equal(percent(3, 0), 0);
  });
});

describe("progressFigures", () => {
  test("the counts and shares", () => {
    const figures = progressFigures({
      assessor_judged: 3,
      campaign_pairs: 40,
      campaign_judged: 10,
      system_pairs: 3,
      system_pairs_settled: 1,
      can_stop: false,
    });
    assert.deepEqual(figures, {
      mine: 3,
      pairs: 40,
      judged: 10,
      share: 25,
      systemPairs: 3,
      settled: 1,
      settledShare: 100 / 3,
      canStop: false,
    });
  });

  test("missing or unreadable counts are 0; numbers in strings are read", () => {
    const figures = progressFigures({ assessor_judged: "12", campaign_pairs: null, can_stop: 1 });
    assert.equal(figures.mine, 12);
    assert.equal(figures.pairs, 0);
    assert.equal(figures.judged, 0);
    assert.equal(figures.share, 0);
    assert.equal(figures.settledShare, 0);
    assert.equal(figures.canStop, true);
    assert.equal(progressFigures({ assessor_judged: "many" }).mine, 0);
  });
});

describe("doneWords", () => {
  test("nothing said: the page's thanks", () => {
    assert.deepEqual(doneWords("", null), { heading: "Thank you!", message: ENOUGH_JUDGMENTS, icon: true, count: "" });
    assert.equal(doneWords(null, null).message, ENOUGH_JUDGMENTS);
  });

  test("the API's reason, unless the ranking is confident enough", () => {
    const closed = "This campaign is closed. Thank you for your help!";
    assert.equal(doneWords(closed, { can_stop: false }).message, closed);
    assert.equal(doneWords(closed, { can_stop: true }).message, ENOUGH_JUDGMENTS);
  });

  test("not open: no thanks and no tick, whatever the ranking", () => {
    const words = doneWords("The campaign is not open right now.", { can_stop: true, assessor_judged: 2 });
    assert.deepEqual(words, {
      heading: "Not open right now",
      message: "The campaign is not open right now.",
      icon: false,
      count: "You judged 2 pairs.",
    });
    assert.equal(doneWords("NOT OPEN yet", null).heading, "Not open right now");
  });

  test("the assessor's count: one pair, pairs, none", () => {
    assert.equal(doneWords("", { assessor_judged: 1 }).count, "You judged 1 pair.");
    assert.equal(doneWords("", { assessor_judged: 0 }).count, "");
    assert.equal(doneWords("", {}).count, "");
  });
});

describe("the recent judgments", () => {
  const judgment = (id, fine = 50) => ({ id, broad: 1, fine });

  test("historyFrom reads a list or {judgments}", () => {
    assert.deepEqual(historyFrom([judgment("a")]), [judgment("a")]);
    assert.deepEqual(historyFrom({ judgments: [judgment("b")] }), [judgment("b")]);
    assert.deepEqual(historyFrom({}), []);
    assert.deepEqual(historyFrom(null), []);
  });

  test("withJudgment puts a new judgment first", () => {
    const items = [judgment("b"), judgment("a")];
    assert.deepEqual(withJudgment(items, judgment("c")), [judgment("c"), judgment("b"), judgment("a")]);
    assert.deepEqual(items, [judgment("b"), judgment("a")]); // not changed in place
  });

  test("withJudgment replaces a revised one where it is", () => {
    const items = [judgment("c"), judgment("b"), judgment("a")];
    assert.deepEqual(withJudgment(items, judgment("b", 90)), [judgment("c"), judgment("b", 90), judgment("a")]);
  });

  test("withJudgment keeps the last HISTORY_SIZE", () => {
    assert.equal(HISTORY_SIZE, 10);
    const items = Array.from({ length: 10 }, (_, i) => judgment(String(9 - i)));
    const next = withJudgment(items, judgment("10"));
    assert.equal(next.length, 10);
    assert.deepEqual(
      next.map((item) => item.id),
      ["10", "9", "8", "7", "6", "5", "4", "3", "2", "1"],
    );
  });

  test("withJudgment without a judgment changes nothing", () => {
    const items = [judgment("a")];
    assert.equal(withJudgment(items, null), items);
    assert.equal(withJudgment(items, undefined), items);
  });
});
