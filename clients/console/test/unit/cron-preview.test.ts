/** The schedule form's cron preview (src/cron-preview.ts), without a browser: the next firings
 * in the schedule's zone, the day fields' either-or, names, steps, and what is not a cron. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { cronFirings, cronPreview } from "../../src/cron-preview.js";

// Sunday 6 December 2026, 01:00 UTC.
const NOW = Date.UTC(2026, 11, 6, 1, 0);

function iso(expression: string, zone: string, count = 3): string[] | null {
  return cronFirings(expression, zone, NOW, count)?.map((date) => date.toISOString()) ?? null;
}

test("Mondays at 08:00 in Berlin (UTC+1 in winter)", () => {
  assert.deepEqual(iso("0 8 * * 1", "Europe/Berlin", 2), ["2026-12-07T07:00:00.000Z", "2026-12-14T07:00:00.000Z"]);
  assert.equal(cronPreview("0 8 * * MON", "Europe/Berlin", NOW, 1), "Next: Mon, 7 Dec 2026, 08:00 (Europe/Berlin)");
});

test("a zone with a 45-minute offset, steps and lists", () => {
  assert.deepEqual(iso("*/30 9,17 * * *", "Asia/Kathmandu", 3), [
    "2026-12-06T03:15:00.000Z",
    "2026-12-06T03:45:00.000Z",
    "2026-12-06T11:15:00.000Z",
  ]);
});

test("both day fields restricted: a day matching either fires", () => {
  // The 1st of the month or any Friday, at noon UTC.
  assert.deepEqual(iso("0 12 1 * FRI", "Etc/UTC", 3), [
    "2026-12-11T12:00:00.000Z",
    "2026-12-18T12:00:00.000Z",
    "2026-12-25T12:00:00.000Z",
  ]);
  assert.deepEqual(iso("0 0 1 JAN *", "Etc/UTC", 1), ["2027-01-01T00:00:00.000Z"]);
});

test("clocks going forward and back: the skipped time after the gap, the repeated one once", () => {
  // Berlin, Sunday 28 March 2027: 02:00 becomes 03:00; Sunday 31 October 2027: 03:00 becomes 02:00.
  const spring = cronFirings("30 2 28 3 *", "Europe/Berlin", NOW, 1)!;
  assert.equal(spring[0]!.getTime() > Date.UTC(2027, 2, 28, 0, 59), true);
  assert.deepEqual(iso("30 2 31 10 *", "Europe/Berlin", 1), ["2027-10-31T00:30:00.000Z"]);
});

test("what is not a cron expression in a known zone says so", () => {
  assert.equal(cronFirings("0 8 * *", "Europe/Berlin", NOW, 1), null);
  assert.equal(cronFirings("61 8 * * *", "Europe/Berlin", NOW, 1), null);
  assert.equal(cronFirings("0 8 * * 1", "Mars/Olympus", NOW, 1), null);
  assert.equal(cronPreview("0 8 31 2 *", "Etc/UTC", NOW), "It never fires.");
});
