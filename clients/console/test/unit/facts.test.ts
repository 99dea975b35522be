/** The words of a task's facts and of a refused request, without a browser. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ApiError, type TaskView } from "@exports/client";

import { errorText, etaText, filtersText, sizeText, taskMatches, whoText } from "../../src/facts.js";

test("an error names its field once, as the API's message does", () => {
  const refused = new ApiError(422, {
    code: "VALIDATION_ERROR",
    message: "filters.date_to: Input should be a valid date",
    field: "filters.date_to",
  });
  assert.equal(errorText(refused), "filters.date_to: Input should be a valid date");
});

test("several invalid fields are each named once, with what is wrong", () => {
  const refused = new ApiError(422, {
    code: "VALIDATION_ERROR",
    message: "filters.date_from: Field required",
    field: "filters.date_from",
    errors: [
      { field: "filters.date_from", message: "Field required" },
      { field: "filters.date_to", message: "Field required" },
    ],
  });
  assert.equal(errorText(refused), "filters.date_from: Field required; filters.date_to: Field required");
});

test("filters, size: short words", () => {
  assert.equal(filtersText({ date_from: "2026-11-01", status: ["paid", "shipped"], rows: 5 }), "date_from 2026-11-01 · status paid, shipped · rows 5");
  assert.equal(filtersText({}), "none");
  assert.equal(sizeText(null), "–");
  assert.equal(sizeText(999), "999 bytes");
  assert.equal(sizeText(283_889_377), "284 MB");
  assert.equal(sizeText(1_500), "1.5 KB");
});

test("who is signed in: the user and what the types bind from the token", () => {
  assert.equal(whoText({ user_id: "alice", bound: { tenant_id: "acme" } }), "Signed in as alice · tenant_id acme");
  assert.equal(whoText({ user_id: "bob", bound: {} }), "Signed in as bob");
});

test("a field error does not quote the raw pattern it failed", () => {
  const refused = new ApiError(422, {
    code: "VALIDATION_ERROR",
    message: "filters.country: String should match pattern '^[A-Z]{2}$'",
    field: "filters.country",
  });
  assert.equal(errorText(refused), "filters.country: is not in the expected format");
});

test("the ETA says done only for a COMPLETED task", () => {
  assert.equal(etaText("COMPLETED", null), "done");
  for (const ended of ["FAILED", "TIMEOUT", "CANCELLED"]) assert.equal(etaText(ended, null), "–");
  assert.equal(etaText("RUNNING", null), "estimating");
  assert.equal(etaText("RUNNING", 42), "about 42 s");
  assert.equal(etaText("RUNNING", 600), "about 10 min");
});

test("the task history's filter: a status, and every word searched in the task's facts", () => {
  const task = {
    task_id: "exp_01KABCDEF",
    export_type: "orders",
    format: "xlsx",
    status: "FAILED",
    filters: { date_from: "2026-11-01", status: "paid" },
    file_name: null,
  } as unknown as TaskView;
  assert.equal(taskMatches(task, "", ""), true);
  assert.equal(taskMatches(task, "ORDERS 2026-11", ""), true);
  assert.equal(taskMatches(task, "orders paid", "FAILED"), true);
  assert.equal(taskMatches(task, "orders", "COMPLETED"), false);
  assert.equal(taskMatches(task, "customers", ""), false);
  assert.equal(taskMatches(task, "abcdef", ""), true);
});
