// How clips are cut (static/js/clip_cut.js): the choices' words follow the excerpt's length and start.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cutLabels } from "../../static/js/clip_cut.js";

describe("cutLabels", () => {
  test("the length and start typed, as the page shows them", () => {
    assert.deepEqual(cutLabels("30", "0.3"), {
      excerpt: "30-second excerpts (from 30\u00a0% of the way in)",
      offsets: "30-second excerpts from a start given per file",
    });
    assert.equal(cutLabels("12.5", "0.25").excerpt, "12.5-second excerpts (from 25\u00a0% of the way in)");
    assert.equal(cutLabels(" 10 ", "0").excerpt, "10-second excerpts (from 0\u00a0% of the way in)");
    assert.equal(cutLabels("45", "0.3333").excerpt, "45-second excerpts (from 33.3\u00a0% of the way in)");
  });

  test("a length or start out of range is left out of the words, not shown wrong", () => {
    for (const seconds of ["", "2", "601", "soon", "NaN", "Infinity", null, undefined]) {
      const labels = cutLabels(seconds, "0.3");
      assert.equal(labels.excerpt, "Excerpts (from 30\u00a0% of the way in)", String(seconds));
      assert.equal(labels.offsets, "Excerpts from a start given per file");
    }
    for (const fraction of ["", "1", "-0.1", "x"]) {
      assert.equal(cutLabels("20", fraction).excerpt, "20-second excerpts", fraction);
    }
  });

  test("the range is the page's (the fields' min and max)", () => {
    assert.equal(cutLabels("5", "0.3", { min: 10, max: 60 }).offsets, "Excerpts from a start given per file");
    assert.equal(
      cutLabels("60", "0.3", { min: 10, max: 60 }).offsets,
      "60-second excerpts from a start given per file",
    );
  });
});
