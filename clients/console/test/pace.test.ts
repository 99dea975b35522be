/** The console's ETA from the pace of progress, on a made-up clock: no browser, no stack. */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { TaskView } from "@exports/client";

import { Pace } from "../src/pace.js";

function running(progress: number): TaskView {
  return { status: "RUNNING", progress, started_at: "2026-01-05T00:00:00Z" } as TaskView;
}

/** A 3,000,000-row export as the issue saw it: 0 % for 26 s (PostgreSQL sorting), then rows
 * read at an even pace for 9 s; one state a second. */
function issueExport(second: number): number {
  return second <= 26 ? 0 : Math.min(100, Math.floor(((second - 26) * 100) / 9));
}

test("the ETA counts from when the progress first moved, within 25 % after the first tenth", () => {
  const pace = new Pace();
  const lefts: Array<[number, number | null]> = [];
  for (let second = 0; second < 35; second += 1) {
    lefts.push([second, pace.secondsLeft(running(issueExport(second)), second * 1000)]);
  }
  for (const [second, left] of lefts) {
    if (issueExport(second) < 10) continue;
    const actual = 35 - second;
    assert.ok(left !== null, `an ETA at ${second} s`);
    assert.ok(Math.abs(left - actual) <= Math.max(1, 0.25 * actual), `at ${second} s: ${left} s shown, ${actual} s left`);
  }
  assert.deepEqual(
    lefts.filter(([second]) => second <= 26).map(([, left]) => left),
    new Array(27).fill(null),
    "no ETA before the progress moved",
  );
});

test("a task first seen part-way measures its pace from there; a retry starts over", () => {
  const pace = new Pace();
  assert.equal(pace.secondsLeft(running(40), 0), null);
  assert.equal(pace.secondsLeft(running(50), 10_000), 50);
  assert.equal(pace.secondsLeft({ ...running(0), status: "PENDING" }, 11_000), null);
  assert.equal(pace.secondsLeft(running(0), 12_000), null);
  assert.equal(pace.secondsLeft(running(20), 16_000), 16);
});
