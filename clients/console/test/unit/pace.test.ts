/** The console's ETA (src/pace.ts) on the progress of a recorded 3,000,000-row CSV export, and on
 * a made-up clock: no browser, no stack. exportctl's tests/client/test_eta.py runs the same cases
 * on its Pace. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import type { TaskView } from "@exports/client";

import { Pace } from "../../src/pace.js";

interface State {
  readonly at: number;
  readonly status: string;
  readonly progress: number;
  readonly rows_written: number;
}

// Recorded on the local stack (docs/console.md, "The export console" says how): the states a client polling
// every 0.5 s saw, in seconds from the submit. From build/test/unit/ up to the repository.
const RECORDED = JSON.parse(
  readFileSync(new URL("../../../../../tests/client/progress_3m_csv.json", import.meta.url), "utf8"),
) as { series: State[] };

function view(state: State): TaskView {
  return { status: state.status, progress: state.progress, rows_written: state.rows_written } as TaskView;
}

/** [when, shown, actually left] of each running state from the first tenth of the rows on whose
 * ETA is missing or off by more than 25 % (a second at least). A pace needs two percentages:
 * counted from the first state past the first percentage with a row read (the worker writes one
 * every 2 s). */
function misses(pace: Pace, series: readonly State[]): [number, number | null, number][] {
  const end = series.find((state) => state.status === "COMPLETED")!.at;
  const first = series.find((state) => state.progress > 0 || state.rows_written > 0)!.progress;
  const found: [number, number | null, number][] = [];
  for (const state of series) {
    const shown = pace.secondsLeft(view(state), state.at * 1000);
    const actual = end - state.at;
    const counted = state.status === "RUNNING" && state.progress >= Math.max(10, first + 1);
    if (counted && (shown === null || Math.abs(shown - actual) > Math.max(1, 0.25 * actual))) {
      found.push([state.at, shown, actual]);
    }
  }
  return found;
}

test("the recorded export's ETA is within a quarter from the first tenth on", () => {
  assert.deepEqual(misses(new Pace(), RECORDED.series), []);
});

test("without the file's finishing the recorded export's ETA reads short at the end", () => {
  const missed = misses(new Pace(0), RECORDED.series);
  assert.ok(missed.length > 0, "the recording shows no finishing: it cannot test the finishing term");
  assert.ok(missed.every(([, shown, actual]) => shown !== null && shown < actual), JSON.stringify(missed));
});

/** The export on a made-up clock: 0 % for 26 s (PostgreSQL sorting), rows at an even pace
 * for 7 s, then 2 s finishing the file at 99 %; done at 35 s. */
function synthetic(second: number): number {
  return second <= 26 ? 0 : Math.min(99, Math.floor(((second - 26) * 100) / 7));
}

for (const pushed of [false, true]) {
  // Polled: a state every second. Pushed: only on a change (0 % at the start, then each second).
  test(`the ETA is paced from the first row read (${pushed ? "pushed" : "polled"})`, () => {
    const series: State[] = [];
    for (let second = 0; second < 35; second += 1) {
      if (pushed && second > 0 && second <= 26) continue;
      series.push({ at: second, status: "RUNNING", progress: synthetic(second), rows_written: synthetic(second) * 30_000 });
    }
    series.push({ at: 35, status: "COMPLETED", progress: 100, rows_written: 3_000_000 });
    const pace = new Pace();
    for (const state of series) {
      const shown = pace.secondsLeft(view(state), state.at * 1000);
      // No ETA before a pace of rows read (the first row is read at 27 s).
      if (state.at <= 27) assert.equal(shown, null, `no ETA at ${state.at} s`);
    }
    assert.deepEqual(misses(new Pace(), series), []);
  });
}

function running(progress: number, rows: number): TaskView {
  return { status: "RUNNING", progress, rows_written: rows } as TaskView;
}

test("a task first seen part-way is paced from there; a retry starts over", () => {
  const pace = new Pace(0);
  assert.equal(pace.secondsLeft(running(40, 1_200_000), 0), null);
  assert.equal(pace.secondsLeft(running(50, 1_500_000), 10_000), 50);
  assert.equal(pace.secondsLeft(running(50, 1_500_000), 12_000), 48); // polled again: counts down
  assert.equal(pace.secondsLeft({ ...running(0, 0), status: "PENDING" }, 13_000), null);
  assert.equal(pace.secondsLeft(running(0, 0), 14_000), null);
  assert.equal(pace.secondsLeft(running(10, 300_000), 16_000), null);
  assert.equal(pace.secondsLeft(running(20, 600_000), 18_000), 16);
});

test("the finishing term is in proportion to the rows expected", () => {
  const pace = new Pace(1e-6);
  pace.secondsLeft(running(10, 300_000), 0);
  // 10 %/s: 5 s of rows left, and 3,000,000 rows expected (1,500,000 at 50 %) finish in 3 s.
  assert.equal(pace.secondsLeft(running(50, 1_500_000), 4_000), 8);
});
