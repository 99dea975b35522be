/** The push wire protocol's messages (docs/push.md, "Protocol (`exports.v1`)") and the events watch() yields. */

import type { components } from "./schema.js";

export type TaskView = components["schemas"]["TaskView"];
export type TaskStatus = components["schemas"]["TaskStatus"];

/** The subprotocol the server selects; the ticket travels as a second one, `ticket.<ticket>`. */
export const SUBPROTOCOL = "exports.v1";

/** The event types of the push stream (the terminal ones are the webhook's). */
export const EVENT_TYPES = [
  "export.pending",
  "export.running",
  "export.progress",
  "export.completed",
  "export.failed",
  "export.timed_out",
  "export.cancelled",
] as const;
export type TaskEventType = (typeof EVENT_TYPES)[number];

/** Statuses after which nothing changes (but a retry, which is a new task). */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>([
  "COMPLETED",
  "FAILED",
  "TIMEOUT",
  "CANCELLED",
]);

/** One change of a task, pushed by the server or seen by a poll. */
export interface TaskEvent {
  type: TaskEventType;
  timestamp: string;
  /** The server's per-task sequence; null for a polled state (polls carry none). */
  seq: number | null;
  /** The task exactly as GET /v1/exports/{task_id} returns it. */
  data: TaskView;
  /** Where the event came from: the WebSocket, or a GET while it was not available. */
  source: "push" | "poll";
}

/** The answer of POST /v1/stream-tickets. */
export interface StreamTicket {
  ticket: string;
  url: string;
  expires_in: number;
}

/** A message the server sends. */
export type ServerMessage =
  | { type: TaskEventType; timestamp: string; seq: number; data: TaskView }
  | { type: "error"; error: { code: string; message: string }; task_id: string | null }
  | { type: "subscribed"; task_id: string | null; all: boolean }
  | { type: "pong" };

/** Whether ``status`` is terminal. */
export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

const STATUS_EVENTS: Record<TaskStatus, TaskEventType> = {
  PENDING: "export.pending",
  RUNNING: "export.running",
  COMPLETED: "export.completed",
  FAILED: "export.failed",
  TIMEOUT: "export.timed_out",
  CANCELLED: "export.cancelled",
};

/** The event a polled state stands for: a running task with progress is a progress step. */
export function polledEvent(view: TaskView, now: Date = new Date()): TaskEvent {
  const type = view.status === "RUNNING" && view.progress > 0 ? "export.progress" : STATUS_EVENTS[view.status];
  return { type, timestamp: now.toISOString(), seq: null, data: view, source: "poll" };
}

/** The message parsed, or null for anything that is not one of the protocol's. */
export function parseServerMessage(raw: unknown): ServerMessage | null {
  if (typeof raw !== "string") return null;
  let message: unknown;
  try {
    message = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof message !== "object" || message === null || !("type" in message)) return null;
  const { type } = message as { type: unknown };
  if (type === "error" || type === "subscribed" || type === "pong") return message as ServerMessage;
  if ((EVENT_TYPES as readonly unknown[]).includes(type)) {
    const event = message as { seq?: unknown; data?: unknown };
    if (typeof event.seq === "number" && typeof event.data === "object" && event.data !== null) {
      return message as ServerMessage;
    }
  }
  return null;
}
