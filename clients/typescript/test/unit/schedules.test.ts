/** The schedule calls against a scripted fetch (no stack): the requests they send, the answers
 * they return, pagination, and errors as ApiErrors. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ApiError, describeTiming, isRelativeWindow, type ScheduleView } from "../../src/index.js";
import { json, scripted } from "./scripted.js";

const BASE = "http://api.test";

function view(id: string, changes: Partial<ScheduleView> = {}): ScheduleView {
  return {
    schedule_id: id,
    name: "Weekly orders",
    export_type: "orders",
    format: "xlsx",
    filters: { date_from: "previous_week" },
    priority: 5,
    timeout_sec: 300,
    callback_url: null,
    csv_bom: false,
    csv_formula_guard: true,
    cron: "0 8 * * 1",
    every: null,
    timezone: "Europe/Berlin",
    start_at: null,
    end_at: null,
    recipients: ["finance@acme.example"],
    state: "ACTIVE",
    paused_reason: null,
    next_runs: [{ utc: "2026-12-07T07:00:00Z", local: "2026-12-07T08:00:00+01:00" }],
    last_run: null,
    consecutive_failures: 0,
    when_empty: "send",
    watermark: null,
    feed_run: null,
    latest_task_id: null,
    permalink: false,
    destinations: [],
    path_template: null,
    created_at: "2026-12-01T10:00:00Z",
    updated_at: "2026-12-01T10:00:00Z",
    ...changes,
  };
}

describe("schedules", () => {
  test("create sends the body, the token and the idempotency key, and returns the view", async () => {
    const { client, sent } = scripted(() => json(201, view("sch_1"), { Location: "/v1/schedules/sch_1" }));
    const created = await client.createSchedule(
      { export_type: "orders", format: "xlsx", filters: { date_from: "previous_week" }, cron: "0 8 * * 1", timezone: "Europe/Berlin" },
      { idempotencyKey: "weekly-1" },
    );
    assert.equal(created.schedule_id, "sch_1");
    assert.equal(created.next_runs[0]?.local, "2026-12-07T08:00:00+01:00");
    const [request] = sent;
    assert.equal(request?.method, "POST");
    assert.equal(request?.path, "/v1/schedules");
    assert.equal(request?.headers.get("authorization"), "Bearer t0ken");
    assert.equal(request?.headers.get("idempotency-key"), "weekly-1");
    assert.equal(request?.headers.get("content-type"), "application/json");
    assert.deepEqual(request?.body, {
      export_type: "orders",
      format: "xlsx",
      filters: { date_from: "previous_week" },
      cron: "0 8 * * 1",
      timezone: "Europe/Berlin",
    });
  });

  test("schedules() follows next_token over every page", async () => {
    const pages: Record<string, unknown> = {
      first: { items: [view("sch_3"), view("sch_2")], next_token: "p2" },
      p2: { items: [view("sch_1")], next_token: null },
    };
    const { client, sent } = scripted((request) => json(200, pages[request.query["next_token"] ?? "first"]));
    const ids: string[] = [];
    for await (const schedule of client.schedules(2)) ids.push(schedule.schedule_id);
    assert.deepEqual(ids, ["sch_3", "sch_2", "sch_1"]);
    assert.deepEqual(
      sent.map((request) => request.query),
      [{ limit: "2" }, { limit: "2", next_token: "p2" }],
    );
  });

  test("update, pause and resume send PATCH bodies; delete takes a 204", async () => {
    const { client, sent } = scripted((request) =>
      request.method === "DELETE" ? new Response(null, { status: 204 }) : json(200, view("sch/1", { state: "PAUSED" })),
    );
    await client.updateSchedule("sch/1", { every: { minutes: 30 }, cron: null, end_at: null });
    const paused = await client.pauseSchedule("sch/1");
    await client.resumeSchedule("sch/1");
    assert.equal(await client.deleteSchedule("sch/1"), undefined);
    assert.equal(paused.state, "PAUSED");
    assert.deepEqual(
      sent.map((request) => [request.method, request.path, request.body]),
      [
        ["PATCH", "/v1/schedules/sch%2F1", { every: { minutes: 30 }, cron: null, end_at: null }],
        ["PATCH", "/v1/schedules/sch%2F1", { state: "PAUSED" }],
        ["PATCH", "/v1/schedules/sch%2F1", { state: "ACTIVE" }],
        ["DELETE", "/v1/schedules/sch%2F1", undefined],
      ],
    );
  });

  test("run now answers the new task; runs are the exports listed by schedule_id", async () => {
    const { client, sent } = scripted((request) =>
      request.method === "POST"
        ? json(202, { task_id: "exp_9", status: "PENDING", created_at: "2026-12-01T10:00:00Z", estimated_completion_sec: 3, status_url: "/v1/exports/exp_9" })
        : json(200, { items: [{ task_id: "exp_9", schedule_id: "sch_1", scheduled_for: "2026-12-07T07:00:00Z" }], next_token: null }),
    );
    const accepted = await client.runSchedule("sch_1");
    const runs = await client.scheduleRuns("sch_1", { limit: 10 });
    assert.equal(accepted.task_id, "exp_9");
    assert.equal(runs.items[0]?.scheduled_for, "2026-12-07T07:00:00Z");
    assert.deepEqual(
      sent.map((request) => [request.method, request.path, request.query]),
      [
        ["POST", "/v1/schedules/sch_1/run", {}],
        ["GET", "/v1/exports", { schedule_id: "sch_1", limit: "10" }],
      ],
    );
  });

  test("the local mailbox", async () => {
    const message = { id: "m1", sent_at: "2026-12-07T07:01:00Z", from: "exports@local.test", to: ["finance@acme.example"], subject: "Weekly orders: 42 rows", text: "..." };
    const { client, sent } = scripted(() => json(200, { items: [message] }));
    assert.deepEqual(await client.mailbox(), [message]);
    assert.equal(sent[0]?.path, "/local/mailbox");
  });

  test("errors are ApiErrors with the envelope's code and field, and Retry-After", async () => {
    const answers = [
      json(404, { error: { code: "SCHEDULE_NOT_FOUND", message: "schedule sch_x not found" } }),
      json(422, { error: { code: "RECIPIENT_NOT_ALLOWED", message: "not allowed", field: "recipients[1]" } }),
      json(429, { error: { code: "SCHEDULE_LIMIT_REACHED", message: "at most 20" } }, { "Retry-After": "30" }),
    ];
    const { client } = scripted(() => answers.shift()!);
    await assert.rejects(client.getSchedule("sch_x"), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.code], [404, "SCHEDULE_NOT_FOUND"]);
      return true;
    });
    await assert.rejects(client.createSchedule({ export_type: "orders", every: { days: 1 }, recipients: ["a@x", "b@y"] }), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.field], [422, "recipients[1]"]);
      return true;
    });
    await assert.rejects(client.listSchedules(), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.code, error.retryAfterSec], [429, "SCHEDULE_LIMIT_REACHED", 30]);
      return true;
    });
  });

  test("relative windows and timings for people", () => {
    for (const value of ["previous_day", "previous_week", "previous_month", "month_to_date", "since_last_run", "last_n_days:7"]) {
      assert.equal(isRelativeWindow(value), true, value);
    }
    for (const value of ["last_n_days:0", "last_n_days:N", "previous_year", "2026-12-01", 7, null]) {
      assert.equal(isRelativeWindow(value), false, String(value));
    }
    assert.equal(describeTiming({ cron: "0 8 * * 1", every: null }), "0 8 * * 1");
    assert.equal(describeTiming({ cron: null, every: { minutes: 30 } }), "every 30 minutes");
    assert.equal(describeTiming({ cron: null, every: { hours: null, days: 1 } }), "every 1 day");
  });

  test("feeds: when_empty and a watermark reset, the latest file's link, the permalink", async () => {
    const { client, sent } = scripted((request) => {
      if (request.path.endsWith("/permalink")) {
        return request.method === "DELETE"
          ? new Response(null, { status: 204 })
          : json(201, { url: `${BASE}/v1/permalinks/sch_1?key=s3cret`, key: "s3cret" });
      }
      if (request.path === "/v1/exports/exp_8/download") {
        return new Response(null, { status: 302, headers: { Location: "https://files.test/exp_8.csv" } });
      }
      return json(200, view("sch_1", { when_empty: "skip", latest_task_id: "exp_8", permalink: true }));
    });
    const changed = await client.updateSchedule("sch_1", { when_empty: "skip", watermark: null });
    const link = await client.latestLink("sch_1");
    const permalink = await client.createPermalink("sch_1");
    await client.revokePermalink("sch_1");
    assert.equal(changed.when_empty, "skip");
    assert.equal(link.url, "https://files.test/exp_8.csv");
    assert.equal(permalink.url, `${BASE}/v1/permalinks/sch_1?key=s3cret`);
    assert.deepEqual(
      sent.map((request) => [request.method, request.path, request.body]),
      [
        ["PATCH", "/v1/schedules/sch_1", { when_empty: "skip", watermark: null }],
        ["GET", "/v1/schedules/sch_1", undefined],
        ["GET", "/v1/exports/exp_8/download", undefined],
        ["POST", "/v1/schedules/sch_1/permalink", undefined],
        ["DELETE", "/v1/schedules/sch_1/permalink", undefined],
      ],
    );
  });

  test("no latest file yet is the service's 404", async () => {
    const { client } = scripted((request) =>
      request.path.endsWith("/latest")
        ? json(404, { error: { code: "NO_LATEST_FILE", message: "no completed run with a file" } })
        : json(200, view("sch_1")),
    );
    await assert.rejects(client.latestLink("sch_1"), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.code], [404, "NO_LATEST_FILE"]);
      return true;
    });
  });
});
