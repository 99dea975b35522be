/** watch() over a real WebSocket server that speaks the push protocol, started here; every HTTP
 * request but POST /v1/stream-tickets is passed on to the real local stack. */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import WebSocket, { WebSocketServer } from "ws";

import { StreamError, type TaskEvent, type TaskView } from "../../src/index.js";
import { API_URL, recent, recordingClient, TOKENS } from "./stack.js";

/** What the push front saw and how it answers. */
interface Front {
  url: string;
  tickets: string[];
  /** Subprotocol offers of each upgrade, and the URL it asked for. */
  upgrades: { protocols: string; url: string }[];
  subscribes: unknown[];
  /** Refuse upgrades (as a missing or reused ticket would be). */
  refuse: boolean;
  /** Called with each subscribe of a connection: sends what the server would. */
  onSubscribe: (socket: WebSocket, message: { task_id: string }, connection: number) => void;
  stop(): Promise<void>;
}

async function startFront(): Promise<Front> {
  const sockets = new WebSocketServer({ noServer: true, handleProtocols: (offered) => (offered.has("exports.v1") ? "exports.v1" : false) });
  let connections = 0;
  const front: Front = {
    url: "",
    tickets: [],
    upgrades: [],
    subscribes: [],
    refuse: false,
    onSubscribe: () => undefined,
    stop: async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer(async (request, response) => {
    if (request.method === "POST" && request.url === "/v1/stream-tickets") {
      const ticket = randomUUID();
      front.tickets.push(ticket);
      response.writeHead(201, { "content-type": "application/json" });
      response.end(JSON.stringify({ ticket, url: front.url.replace("http", "ws") + "/", expires_in: 60 }));
      return;
    }
    const answer = await fetch(`${API_URL}${request.url}`, {
      method: request.method!,
      headers: Object.fromEntries(
        Object.entries(request.headers).filter(([name]) => !["host", "connection", "content-length"].includes(name)),
      ) as Record<string, string>,
      redirect: "manual",
      ...(request.method === "GET" ? {} : { body: new Uint8Array(await body(request)) }),
    });
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  server.on("upgrade", (request, socket, head) => {
    const protocols = request.headers["sec-websocket-protocol"] ?? "";
    front.upgrades.push({ protocols, url: request.url ?? "" });
    const ticket = protocols.split(",").map((offer) => offer.trim()).find((offer) => offer.startsWith("ticket."));
    if (front.refuse || !ticket || !front.tickets.includes(ticket.slice("ticket.".length))) {
      socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n");
      return;
    }
    sockets.handleUpgrade(request, socket, head, (client) => {
      const connection = ++connections;
      client.on("message", (raw) => {
        const message = JSON.parse(String(raw)) as { action: string; task_id: string };
        front.subscribes.push(message);
        if (message.action === "subscribe") front.onSubscribe(client, message, connection);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  front.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return front;
}

async function body(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function event(type: TaskEvent["type"], seq: number, view: TaskView, changes: Partial<TaskView>): string {
  return JSON.stringify({ type, timestamp: new Date().toISOString(), seq, data: { ...view, ...changes } });
}

async function collect(events: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const seen: TaskEvent[] = [];
  for await (const item of events) seen.push(item);
  return seen;
}

describe("watch() over the push protocol", () => {
  let front: Front;
  let task: TaskView;
  before(async () => {
    front = await startFront();
    const { client } = recordingClient("alice");
    // A real task of the stack's: what the events carry, and what a poll finds.
    const accepted = await client.submit({ export_type: "orders", format: "csv", filters: { date_from: recent(9), date_to: recent(2) } });
    task = await client.get(accepted.task_id);
  });
  after(() => front.stop());

  test("ticket in the subprotocol header, stale events dropped, resumed after a drop, no polling", async () => {
    front.onSubscribe = (socket, message, connection) => {
      assert.equal(message.task_id, task.task_id);
      if (connection === 1) {
        socket.send(JSON.stringify({ type: "subscribed", task_id: task.task_id, all: false }));
        socket.send(event("export.running", 3, task, { status: "RUNNING", progress: 10 }));
        socket.send(event("export.progress", 4, task, { status: "RUNNING", progress: 50 }));
        socket.send(event("export.progress", 4, task, { status: "RUNNING", progress: 50 }));
        socket.send(event("export.progress", 2, task, { status: "PENDING", progress: 0 }));
        // Dropped mid-export: the client must come back and not miss the end.
        setTimeout(() => socket.terminate(), 50);
      } else {
        // The current state first (already seen: seq 4), then what happened meanwhile.
        socket.send(event("export.progress", 4, task, { status: "RUNNING", progress: 50 }));
        socket.send(event("export.completed", 6, task, { status: "COMPLETED", progress: 100 }));
      }
    };
    const { client, requests } = recordingClient("alice", { baseUrl: front.url, WebSocket });
    const events = await collect(client.watch(task.task_id));
    assert.deepEqual(
      events.map((item) => [item.seq, item.type, item.source]),
      [
        [3, "export.running", "push"],
        [4, "export.progress", "push"],
        [6, "export.completed", "push"],
      ],
    );
    assert.equal(front.tickets.length, 2, "a fresh ticket for the second connection");
    for (const [index, upgrade] of front.upgrades.entries()) {
      assert.deepEqual(upgrade.protocols.split(",").map((offer) => offer.trim()), ["exports.v1", `ticket.${front.tickets[index]}`]);
      assert.ok(!upgrade.url.includes(front.tickets[index]!), "the ticket is never in the URL");
    }
    assert.deepEqual(requests, ["POST /v1/stream-tickets", "POST /v1/stream-tickets"], "no GET while the socket was up");
  });

  test("a task the stream does not show the caller: StreamError TASK_NOT_FOUND", async () => {
    front.onSubscribe = (socket, message) =>
      socket.send(JSON.stringify({ type: "error", error: { code: "TASK_NOT_FOUND", message: "no such task" }, task_id: message.task_id }));
    const { client } = recordingClient("bob", { baseUrl: front.url, WebSocket });
    await assert.rejects(collect(client.watch(task.task_id)), (error: unknown) => {
      assert.ok(error instanceof StreamError);
      assert.equal(error.code, "TASK_NOT_FOUND");
      assert.equal(error.taskId, task.task_id);
      return true;
    });
    client.close();
  });

  test("a refused upgrade falls back to polling the real stack to the end", async () => {
    front.refuse = true;
    try {
      const upgradesBefore = front.upgrades.length;
      const { client, requests } = recordingClient("alice", { baseUrl: front.url, WebSocket });
      const events = await collect(client.watch(task.task_id, { backoff: { initialMs: 100, maxMs: 400, giveUpMs: 60_000 } }));
      assert.equal(events.at(-1)?.type, "export.completed");
      assert.ok(events.every((item) => item.source === "poll"));
      assert.ok(requests.includes(`GET /v1/exports/${task.task_id}`));
      // Before each poll it tried the socket (again): a new ticket for every upgrade.
      const tickets = requests.filter((request) => request === "POST /v1/stream-tickets").length;
      assert.ok(tickets >= 1);
      assert.equal(front.upgrades.length - upgradesBefore, tickets);
    } finally {
      front.refuse = false;
    }
  });

  test("an API without a push stream is polled without asking again", async (t) => {
    const { client, requests } = recordingClient("alice", { WebSocket });
    if ((await fetch(`${API_URL}/v1/stream-tickets`, { method: "POST", headers: { Authorization: `Bearer ${TOKENS.alice}` } })).status === 201) {
      t.skip("the stack serves push now: its own socket is tested in http.test.ts");
      return;
    }
    const events = await collect(client.watch(task.task_id, { backoff: { initialMs: 100, maxMs: 400, giveUpMs: 60_000 } }));
    assert.equal(events.at(-1)?.data.status, "COMPLETED");
    assert.equal(requests.filter((request) => request === "POST /v1/stream-tickets").length, 1, requests.join("\n"));
  });
});
