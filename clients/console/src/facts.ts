/** The words the console shows for a task's facts and for a refused request (no DOM: node tests them). */

import type { CallerView, Delivery, FieldProblem, TaskView } from "@exports/client";

/** ``{"date_from": "2026-11-01", "status": ["paid", "shipped"]}`` -> ``date_from 2026-11-01 · status paid, shipped``;
 * no filters -> ``none``. */
export function filtersText(filters: Readonly<Record<string, unknown>>): string {
  const parts = Object.entries(filters).map(([name, value]) => `${name} ${valueText(value)}`);
  return parts.length > 0 ? parts.join(" · ") : "none";
}

function valueText(value: unknown): string {
  if (Array.isArray(value)) return value.map(valueText).join(", ");
  if (value !== null && typeof value === "object") return JSON.stringify(value);
  return String(value);
}

const UNITS = ["bytes", "KB", "MB", "GB", "TB"] as const;

/** A file's size in the unit that keeps it short (1,000 based, as browsers show downloads);
 * unknown until the file exists. */
export function sizeText(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "–";
  let size = bytes;
  let unit = 0;
  while (size >= 1000 && unit < UNITS.length - 1) {
    size /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${bytes.toLocaleString("en")} bytes` : `${size.toFixed(size < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

/** What the form shows for a refused request: every invalid field once, with what is wrong with it.
 * The API's own message already starts with the field it names (``filters.date_to: …``), so it is
 * shown as it is, never prefixed again. */
export function errorText(failure: { readonly message: string; readonly problems: readonly FieldProblem[] }): string {
  if (failure.problems.length > 1) {
    return failure.problems.map((problem) => `${problem.field}: ${withoutPattern(problem.message)}`).join("; ");
  }
  return withoutPattern(failure.message);
}

// pydantic's words for a value that does not match a field's pattern, and the pattern itself.
const PATTERN_MESSAGE = /String should match pattern '.*'$/;

/** A message without the raw regular expression a pattern check quotes: a person reads what is
 * wrong, not ``^[A-Z]{2}$`` (the field's description in the form says what is expected). */
function withoutPattern(message: string): string {
  return message.replace(PATTERN_MESSAGE, "is not in the expected format");
}

/** A task's ETA: the time left while it runs, ``done`` once COMPLETED, nothing to wait for when it
 * ended otherwise (failed, timed out, cancelled: it will not be done). */
export function etaText(status: string, secondsLeft: number | null): string {
  if (status === "COMPLETED") return "done";
  if (TERMINAL_NOT_DONE.has(status)) return "–";
  if (secondsLeft === null) return "estimating";
  return secondsLeft < 90 ? `about ${secondsLeft} s` : `about ${Math.round(secondsLeft / 60)} min`;
}

const TERMINAL_NOT_DONE = new Set(["FAILED", "TIMEOUT", "CANCELLED"]);

/** ``Signed in as alice · tenant_id acme``: the user, and what the types bind from the token, by
 * the names they bind it as (nothing more when they bind nothing). */
export function whoText(caller: CallerView): string {
  const bound = filtersText(caller.bound ?? {});
  return `Signed in as ${caller.user_id}${bound === "none" ? "" : ` · ${bound}`}`;
}

/** Whether ``task`` is shown by the task history's filter: its status is ``status`` (empty: any)
 * and every word of ``search`` is in its type, format, id, status, filters or file name (any case). */
export function taskMatches(task: TaskView, search: string, status: string): boolean {
  if (status && task.status !== status) return false;
  const haystack = [task.export_type, task.format, task.task_id, task.status, filtersText(task.filters), task.file_name ?? ""]
    .join(" ")
    .toLowerCase();
  return search
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

/** One delivery for people: `dst_…: delivered to /upload/orders.csv`, `…: failed after 3
 * attempts: the server refused our key`, `…: pending`. */
export function deliveryText(delivery: Delivery): string {
  const status = delivery.status ?? "PENDING";
  const attempts = delivery.attempts ?? 0;
  if (status === "DELIVERED") return `${delivery.destination_id}: delivered to ${delivery.remote_path ?? "?"}`;
  if (status === "FAILED") {
    const tries = `${attempts} attempt${attempts === 1 ? "" : "s"}`;
    return `${delivery.destination_id}: failed after ${tries}: ${delivery.error?.message ?? "no reason given"}`;
  }
  return `${delivery.destination_id}: ${status.toLowerCase()}${attempts > 0 ? ` (${attempts} attempts so far)` : ""}`;
}
