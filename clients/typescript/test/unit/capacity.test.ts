import assert from "node:assert/strict";
import { test } from "node:test";

import { ApiError, ExportsClient } from "../../src/index.js";

const ACCEPTED = {
  task_id: "exp_1",
  status: "PENDING",
  created_at: "2026-12-06T08:00:00Z",
  estimated_completion_sec: 3,
  status_url: "/v1/exports/exp_1",
};

function refusal(retryAfter: string | null): Response {
  const body = {
    error: {
      code: "WOULD_TIME_OUT",
      message: "the exports queued ahead would keep this one from finishing",
      estimate: { estimated_start_sec: 40, estimated_completion_sec: 41, timeout_sec: 30 },
    },
  };
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (retryAfter !== null) headers["retry-after"] = retryAfter;
  return new Response(JSON.stringify(body), { status: 429, headers });
}

function scripted(...answers: (() => Response)[]): { fetch: typeof globalThis.fetch; calls: () => number } {
  let calls = 0;
  const fetch = async (): Promise<Response> => {
    const answer = answers[Math.min(calls++, answers.length - 1)];
    if (answer === undefined) throw new Error("no answer scripted");
    return answer();
  };
  return { fetch: fetch as typeof globalThis.fetch, calls: () => calls };
}

test("a refused submit waits Retry-After plus jitter, says so, and submits again", async () => {
  const api = scripted(
    () => refusal("10"),
    () => refusal("10"),
    () => new Response(JSON.stringify(ACCEPTED), { status: 202, headers: { "content-type": "application/json" } }),
  );
  const waits: number[] = [];
  const told: [string, number | null, number][] = [];
  const client = new ExportsClient({
    baseUrl: "http://api.test",
    token: "t",
    fetch: api.fetch,
    WebSocket: null,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
    onRefused: (refused, seconds) => told.push([refused.code, refused.estimate?.estimated_completion_sec ?? null, seconds]),
  });

  const accepted = await client.submit({ export_type: "orders", filters: {} });

  assert.equal(accepted.task_id, "exp_1");
  assert.deepEqual(waits, [12_500, 12_500]);
  assert.deepEqual(told, [
    ["WOULD_TIME_OUT", 41, 12.5],
    ["WOULD_TIME_OUT", 41, 12.5],
  ]);
  assert.equal(api.calls(), 3);
});

test("the wait is bounded, can be turned off, and backs off a 429 without Retry-After", async () => {
  const waits: number[] = [];
  const options = {
    baseUrl: "http://api.test",
    token: "t",
    WebSocket: null,
    random: () => 0,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
  const bounded = new ExportsClient({ ...options, fetch: scripted(() => refusal("10")).fetch, waitForCapacitySec: 25 });
  await assert.rejects(bounded.submit({ export_type: "orders", filters: {} }), (error: unknown) => {
    return error instanceof ApiError && error.status === 429 && error.estimate?.timeout_sec === 30;
  });
  assert.deepEqual(waits, [10_000, 10_000]);

  const off = new ExportsClient({ ...options, fetch: scripted(() => refusal("10")).fetch, waitForCapacitySec: 0 });
  await assert.rejects(off.submit({ export_type: "orders", filters: {} }), ApiError);
  assert.equal(waits.length, 2);

  const gateway = new ExportsClient({ ...options, fetch: scripted(() => refusal(null)).fetch, waitForCapacitySec: 3.5 });
  await assert.rejects(gateway.submit({ export_type: "orders", filters: {} }), ApiError);
  assert.deepEqual(waits.slice(2), [1_000, 2_000]);
});
