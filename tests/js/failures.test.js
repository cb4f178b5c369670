// Failed requests (static/js/judge/failures.js): retrying, the idempotency key, conflict notices.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { conflictNotice, isConflict, sleep, uuidV4, withRetry } from "../../static/js/judge/failures.js";

class Offline extends Error {}

/** An attempt failing with `errors` in turn, then answering "ok"; it counts its calls. */
function attempts(...errors) {
  const attempt = async () => {
    attempt.calls += 1;
    const error = errors.shift();
    if (error) throw error;
    return "ok";
  };
  attempt.calls = 0;
  return attempt;
}

describe("withRetry", () => {
  const waits = [];
  const options = (retries) => ({
    retries,
    delayMs: 800,
    retryable: (error) => error instanceof Offline,
    wait: async (ms) => {
      waits.push(ms);
    },
  });

  test("an answer at once: no wait", async () => {
    waits.length = 0;
    const attempt = attempts();
    assert.equal(await withRetry(attempt, options(1)), "ok");
    assert.equal(attempt.calls, 1);
    assert.deepEqual(waits, []);
  });

  test("a retryable failure: again after the delay", async () => {
    waits.length = 0;
    const attempt = attempts(new Offline("down"));
    assert.equal(await withRetry(attempt, options(1)), "ok");
    assert.equal(attempt.calls, 2);
    assert.deepEqual(waits, [800]);
  });

  test("another failure is thrown at once", async () => {
    waits.length = 0;
    const refused = new Error("409");
    const attempt = attempts(refused);
    await assert.rejects(withRetry(attempt, options(1)), (error) => error === refused);
    assert.equal(attempt.calls, 1);
    assert.deepEqual(waits, []);
  });

  test("out of retries: the last failure is thrown, whatever it is", async () => {
    waits.length = 0;
    const last = new Offline("still down");
    const attempt = attempts(new Offline("down"), last);
    await assert.rejects(withRetry(attempt, options(1)), (error) => error === last);
    assert.equal(attempt.calls, 2);
    assert.deepEqual(waits, [800]);

    const refused = new Error("refused");
    const second = attempts(new Offline("down"), refused);
    await assert.rejects(withRetry(second, options(3)), (error) => error === refused);
    assert.equal(second.calls, 2);
  });

  test("as many retries as asked", async () => {
    waits.length = 0;
    const none = attempts(new Offline("down"));
    await assert.rejects(withRetry(none, options(0)), Offline);
    assert.equal(none.calls, 1);
    const two = attempts(new Offline("1"), new Offline("2"));
    assert.equal(await withRetry(two, options(2)), "ok");
    assert.equal(two.calls, 3);
    assert.deepEqual(waits, [800, 800]);
  });

  test("sleep waits", async () => {
    const start = performance.now();
    await sleep(30);
    assert.ok(performance.now() - start >= 25);
  });
});

describe("conflicts", () => {
  test("409 and 410 are conflicts", () => {
    assert.equal(isConflict(409), true);
    assert.equal(isConflict(410), true);
    for (const status of [200, 400, 404, 422, 500]) assert.equal(isConflict(status), false, String(status));
  });

  test("the notice says why, the closed campaign first", () => {
    assert.equal(conflictNotice({ status: 409, code: "campaign_closed" }), "The campaign has just closed.");
    assert.equal(conflictNotice({ status: 410, code: "campaign_closed" }), "The campaign has just closed.");
    assert.match(conflictNotice({ status: 410, code: "lease_expired" }), /^Your time on that pair ran out/);
    assert.match(conflictNotice({ status: 409, code: "pair_unplayable" }), /^That pair can no longer be played/);
    assert.match(conflictNotice({ status: 409, code: "pair_not_leased" }), /^That pair was no longer yours/);
    assert.equal(
      conflictNotice({ status: 409, code: "already_judged" }),
      "You had already judged that pair (you can revise it under Recent judgments). Here is a new one.",
    );
  });
});

describe("uuidV4", () => {
  test("the version (4) and variant (10xx) bits set, 8-4-4-4-12 hex digits", () => {
    assert.equal(uuidV4(new Uint8Array(16)), "00000000-0000-4000-8000-000000000000");
    assert.equal(uuidV4(new Uint8Array(16).fill(0xff)), "ffffffff-ffff-4fff-bfff-ffffffffffff");
    const counting = Uint8Array.from({ length: 16 }, (_, i) => i);
    assert.equal(uuidV4(counting), "00010203-0405-4607-8809-0a0b0c0d0e0f");
  });

  test("the random bytes are left as they are", () => {
    const random = new Uint8Array(16).fill(0xff);
    uuidV4(random);
    assert.deepEqual([...random], new Array(16).fill(0xff));
  });
});
