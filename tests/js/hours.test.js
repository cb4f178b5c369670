// Volunteers' hours in words (static/js/hours.js), as the command line says them.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatHours, formatHoursSpan } from "../../static/js/hours.js";

describe("formatHours", () => {
  test("seconds under a minute, minutes under an hour, hours above", () => {
    assert.deepEqual([null, undefined, 0, 0.001, 0.1, 0.99, 1, 12.34].map(formatHours), [
      "—",
      "—",
      "0 s",
      "4 s",
      "6 min",
      "59 min",
      "1.0 h",
      "12.3 h",
    ]);
  });
});

describe("formatHoursSpan", () => {
  test("one unit when both ends share it, both otherwise, open above without a high end", () => {
    assert.equal(formatHoursSpan(9.5, 22), "9.5–22.0 h");
    assert.equal(formatHoursSpan(0.5, 1.5), "30 min to 1.5 h");
    assert.equal(formatHoursSpan(21, null), "21.0 h or more");
  });
});
