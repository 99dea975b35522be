import assert from "node:assert/strict";
import { test } from "node:test";

import { Backoff, SEED_BACKOFF } from "../../src/index.js";

test("the seeds' backoff: 1 s doubling to 30 s, giving up after 5 minutes of waiting", () => {
  const backoff = new Backoff(SEED_BACKOFF);
  const waits: number[] = [];
  for (let wait = backoff.next(); wait !== null; wait = backoff.next()) waits.push(wait);
  assert.deepEqual(waits.slice(0, 7), [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  assert.equal(
    waits.reduce((sum, wait) => sum + wait, 0),
    300_000,
  );
  assert.ok(waits.every((wait) => wait <= 30_000));
});

test("reset starts again from the first wait", () => {
  const backoff = new Backoff({ initialMs: 10, maxMs: 40, giveUpMs: 1_000 });
  backoff.next();
  backoff.next();
  backoff.reset();
  assert.equal(backoff.next(), 10);
  assert.equal(backoff.waited, 10);
});
