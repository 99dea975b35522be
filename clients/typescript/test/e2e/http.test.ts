/** The HTTP calls against the real local stack, and watch()'s polling when there is no socket. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import WebSocket from "ws";

import { ApiError, type TaskEvent, WatchTimeoutError } from "../../src/index.js";
import { recent, recordingClient } from "./stack.js";

const QUICK = { export_type: "orders", format: "csv", filters: { date_from: recent(7), date_to: recent(0) } } as const;
// A year read day by day: seconds of work, long enough to act on it before it ends.
const slow = (variant: number) => ({
  export_type: "orders",
  format: "csv" as const,
  filters: { date_from: recent(365 + variant), date_to: recent(variant) },
});

async function collect(events: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const seen: TaskEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe("against the local stack", () => {
  test("export types carry their filter schemas", async () => {
    const { client } = recordingClient("alice");
    const types = await client.exportTypes();
    const orders = types.find((type) => type.name === "orders");
    assert.ok(orders, "orders is one of alice's types");
    assert.deepEqual((orders.filters_schema as { required: string[] }).required, ["date_from", "date_to"]);
    assert.equal((await client.exportType("orders")).name, "orders");
    await assert.rejects(client.exportType("no_such_type"), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 404);
      return true;
    });
  });

  test("me: the token's user", async () => {
    const { client } = recordingClient("bob");
    assert.equal((await client.me()).user_id, "bob");
  });

  test("submit, watch by polling to the end, list, get and download the file", async () => {
    const { client, requests } = recordingClient("alice");
    const accepted = await client.submit(QUICK);
    assert.equal(accepted.status, "PENDING");
    const events = await collect(
      client.watch(accepted.task_id, { backoff: { initialMs: 100, maxMs: 400, giveUpMs: 60_000 } }),
    );
    const last = events.at(-1)!;
    assert.equal(last.type, "export.completed");
    assert.equal(last.source, "poll");
    assert.equal(last.data.progress, 100);
    assert.ok(events.every((event) => event.data.task_id === accepted.task_id));
    // Every poll was a GET of the task: no socket was asked for (WebSocket: null).
    assert.ok(requests.includes(`GET /v1/exports/${accepted.task_id}`));
    assert.ok(!requests.some((request) => request.includes("stream-tickets")));

    const view = await client.get(accepted.task_id);
    assert.equal(view.status, "COMPLETED");
    assert.ok(view.download_url);
    const page = await client.list({ limit: 50 });
    assert.ok(page.items.some((item) => item.task_id === accepted.task_id));

    const file = await (await client.download(accepted.task_id)).text();
    const [header, ...rows] = file.trim().split(/\r?\n/);
    assert.match(header!, /^Order ID,/);
    assert.equal(rows.length, view.rows_written);
  });

  test("submit in a time zone: the task records it, the file's instants carry its offset, a bad zone is a 422", async () => {
    const { client } = recordingClient("alice");
    const accepted = await client.submit({ ...QUICK, timezone: "Asia/Kathmandu" });
    const events = await collect(
      client.watch(accepted.task_id, { backoff: { initialMs: 100, maxMs: 400, giveUpMs: 60_000 } }),
    );
    assert.equal(events.at(-1)!.type, "export.completed");
    assert.equal((await client.get(accepted.task_id)).timezone, "Asia/Kathmandu");
    const [header, first] = (await (await client.download(accepted.task_id)).text()).trim().split(/\r?\n/);
    assert.match(header!, /Created at \(Asia\/Kathmandu\)/);
    assert.match(first!, /,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+05:45,/);
    // Not a zone of the document's TimeZone: the type refuses it, so the test casts it through.
    const unknownZone = "Mars/Olympus" as unknown as "Etc/UTC";
    await assert.rejects(client.submit({ ...QUICK, timezone: unknownZone }), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 422);
      assert.equal(error.field, "timezone");
      return true;
    });
  });

  test("another user's task is not found, by get, cancel and download", async () => {
    const { client: alice } = recordingClient("alice");
    const { client: bob } = recordingClient("bob");
    const accepted = await alice.submit(QUICK);
    for (const call of [() => bob.get(accepted.task_id), () => bob.cancel(accepted.task_id), () => bob.download(accepted.task_id)]) {
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 404);
        assert.equal(error.code, "TASK_NOT_FOUND");
        return true;
      });
    }
    assert.ok(!(await bob.list({ limit: 100 })).items.some((item) => item.task_id === accepted.task_id));
  });

  test("bad filters: a typed error naming the field", async () => {
    const { client } = recordingClient("alice");
    await assert.rejects(
      client.submit({ export_type: "orders", format: "csv", filters: { date_from: "yesterday", date_to: recent(0) } }),
      (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 422);
        assert.match(error.field ?? "", /date_from/);
        return true;
      },
    );
  });

  test("cancel a running export, then retry it as a new task; a download before the end is refused", async () => {
    const { client } = recordingClient("alice");
    const accepted = await client.submit(slow(Math.floor(Math.random() * 30)));
    await assert.rejects(client.downloadLink(accepted.task_id), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 409);
      return true;
    });
    const cancelled = await client.cancel(accepted.task_id);
    assert.equal(cancelled.status, "CANCELLED");
    const retried = await client.retry(accepted.task_id);
    assert.notEqual(retried.task_id, accepted.task_id);
    assert.equal((await client.get(retried.task_id)).retry_of, accepted.task_id);
    await client.cancel(retried.task_id);
  });

  test("polling gives up with a typed error once its time is spent", async () => {
    const { client } = recordingClient("alice");
    const accepted = await client.submit(slow(40 + Math.floor(Math.random() * 30)));
    await assert.rejects(
      collect(client.watch(accepted.task_id, { backoff: { initialMs: 50, maxMs: 100, giveUpMs: 200 } })),
      (error: unknown) => error instanceof WatchTimeoutError && error.taskId === accepted.task_id,
    );
    await client.cancel(accepted.task_id);
  });

  test("with the stack's own push stream (once it offers one): no GET of the task while the socket is up", async (t) => {
    const { client, requests } = recordingClient("alice", { WebSocket });
    const probe = await globalThis.fetch(`${process.env["EXPORTS_API_URL"]}/v1/stream-tickets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${process.env["EXPORTS_TOKEN_ALICE"]}` },
    });
    if (probe.status !== 201) {
      t.skip(`POST /v1/stream-tickets answered ${probe.status}: this stack has no push stream yet`);
      return;
    }
    const accepted = await client.submit({ ...QUICK, filters: { date_from: recent(8), date_to: recent(1) } });
    const events = await collect(client.watch(accepted.task_id));
    assert.equal(events.at(-1)?.type, "export.completed");
    assert.ok(events.every((event) => event.source === "push"));
    assert.ok(!requests.includes(`GET /v1/exports/${accepted.task_id}`), requests.join("\n"));
    client.close();
  });
});
