/** The console's ETA from the pace of progress, on a made-up clock: no browser, no stack. */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { TaskView } from "@exports/client";

import { Pace } from "../src/pace.js";

function running(progress: number): TaskView {
  return { status: "RUNNING", progress, rows_written: progress * 30_000, started_at: "2026-01-05T00:00:00Z" } as TaskView;
}

/** A 3,000,000-row export as the issue saw it: 0 % for 26 s (PostgreSQL sorting), then rows
 * read at an even pace for 9 s. */
function issueExport(second: number): number {
  return second <= 26 ? 0 : Math.min(99, Math.floor(((second - 26) * 100) / 9));
}

for (const pushed of [false, true]) {
  // Polled: a state every second. Pushed: a state only when it changed (0 % at the start, then
  // every second from the first row on).
  test(`the ETA is paced from the first row read, within 25 % after the first tenth (${pushed ? "pushed" : "polled"})`, () => {
    const pace = new Pace();
    const lefts = new Map<number, number | null>();
    for (let second = 0; second < 35; second += 1) {
      if (pushed && second > 0 && second <= 26) continue;
      lefts.set(second, pace.secondsLeft(running(issueExport(second)), second * 1000));
    }
    for (const [second, left] of lefts) {
      if (second <= 27) {
        assert.equal(left, null, `no ETA at ${second} s, before a pace of rows read`);
        continue;
      }
      const actual = 35 - second;
      assert.ok(left !== null, `an ETA at ${second} s`);
      assert.ok(Math.abs(left - actual) <= Math.max(1, 0.25 * actual), `at ${second} s: ${left} s shown, ${actual} s left`);
    }
  });
}

test("a task first seen part-way measures its pace from there; a retry starts over", () => {
  const pace = new Pace();
  assert.equal(pace.secondsLeft(running(40), 0), null);
  assert.equal(pace.secondsLeft(running(50), 10_000), 50);
  assert.equal(pace.secondsLeft({ ...running(0), status: "PENDING" }, 11_000), null);
  assert.equal(pace.secondsLeft(running(0), 12_000), null);
  assert.equal(pace.secondsLeft(running(10), 14_000), null);
  assert.equal(pace.secondsLeft(running(20), 16_000), 16);
});
