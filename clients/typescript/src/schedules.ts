/** Schedules (issue 33's contract, docs/schedules.md): recurring exports in a time zone.
 *
 * Written by hand from the contract, as the service's routes are being added: once
 * docs/openapi.json has them, these types can become aliases of its components. */

import type { TaskView } from "./events.js";
import type { components } from "./schema.js";

type ExportFormat = components["schemas"]["ExportFormat"];

/** The relative windows a type's window filter may take, resolved at each firing in the
 * schedule's zone; `last_n_days:N` takes a whole number N of at least 1. `since_last_run` makes
 * a feed (a type that declares its change column): each run the changes since the last
 * COMPLETED run. */
export const RELATIVE_WINDOWS = [
  "previous_day",
  "previous_week",
  "previous_month",
  "month_to_date",
  "since_last_run",
  "last_n_days:N",
] as const;

/** A run of 0 rows: sent as any other, or skipped (no file, no mail; its webhook says so). */
export type WhenEmpty = "send" | "skip";

/** A feed's run in flight: its task (once made) and the span of changes it covers. */
export interface FeedRun {
  task_id: string | null;
  scheduled_for: string;
  window_from: string;
  window_to: string;
}

/** A schedule's secret permalink, shown once: its URL gives the latest file without a token. */
export interface Permalink {
  url: string;
  key: string;
}

/** Whether ``value`` is one of the relative windows (``last_n_days:7`` included). */
export function isRelativeWindow(value: unknown): boolean {
  if (typeof value !== "string") return false;
  return (RELATIVE_WINDOWS as readonly string[]).slice(0, -1).includes(value) || /^last_n_days:[1-9]\d*$/.test(value);
}

/** A fixed interval: exactly one of minutes, hours or days. */
export type Every = { minutes: number } | { hours: number } | { days: number };

export type ScheduleState = "ACTIVE" | "PAUSED";

/** Why a schedule is paused (`PAUSED_BY_USER`, `TOO_MANY_FAILURES`, `EXPORT_TYPE_GONE`, `ACCESS_REVOKED`, ...). */
export interface PausedReason {
  code: string;
  message: string;
}

/** A coming firing: the instant, and the schedule's local wall time (with its offset). */
export interface NextRun {
  utc: string;
  local: string;
}

/** The task of the latest firing and how it went. */
export interface LastRun {
  /** Null when the firing made no task (e.g. refused at admission). */
  task_id: string | null;
  scheduled_for: string;
  status: TaskView["status"];
  finished_at: string | null;
}

/** The body of POST /v1/schedules: an export request plus when it runs and who is mailed. */
export interface ScheduleRequest {
  name?: string;
  export_type: string;
  format?: ExportFormat;
  filters?: Record<string, unknown>;
  priority?: number;
  timeout_sec?: number;
  callback_url?: string;
  csv_bom?: boolean;
  csv_formula_guard?: boolean;
  /** Five cron fields, in `timezone`; exactly one of `cron` and `every`. */
  cron?: string;
  every?: Every;
  /** IANA zone (default `Etc/UTC`): of the firings, the relative windows and the files. */
  timezone?: string;
  start_at?: string;
  end_at?: string | null;
  recipients?: string[];
  when_empty?: WhenEmpty;
  /** The tenant's destinations each run's file is delivered to (`dst_…` ids). */
  destinations?: string[];
  /** Where the file goes under each destination: `{type}`, `{date}`, `{task_id}`, `{file}`. */
  path_template?: string;
}

/** PATCH /v1/schedules/{id}: any of these; `null` clears (`end_at: null`: no end). */
export interface ScheduleChanges {
  name?: string | null;
  cron?: string | null;
  every?: Every | null;
  timezone?: string;
  filters?: Record<string, unknown>;
  recipients?: string[];
  start_at?: string | null;
  end_at?: string | null;
  state?: ScheduleState;
  when_empty?: WhenEmpty;
  /** A feed's next start; `null`: back to its beginning (`start_at`, the type's floor). */
  watermark?: string | null;
  /** Replaces the destinations each run's file is delivered to (checked as on a create); `[]`
   * or `null`: none. */
  destinations?: string[] | null;
  /** Where under them; `null`: back to `{file}`. Alone, it keeps the schedule's destinations. */
  path_template?: string | null;
}

/** A schedule as its owner sees it. */
export interface ScheduleView {
  schedule_id: string;
  name: string | null;
  export_type: string;
  format: ExportFormat;
  filters: Record<string, unknown>;
  priority: number;
  timeout_sec: number;
  callback_url: string | null;
  csv_bom: boolean;
  csv_formula_guard: boolean;
  cron: string | null;
  every: { minutes?: number | null; hours?: number | null; days?: number | null } | null;
  timezone: string;
  start_at: string | null;
  end_at: string | null;
  recipients: string[];
  state: ScheduleState;
  paused_reason: PausedReason | null;
  /** The next five firings; empty while paused or once ended. */
  next_runs: NextRun[];
  last_run: LastRun | null;
  consecutive_failures: number;
  when_empty: WhenEmpty;
  /** A feed's: where its next run starts (null before its first COMPLETED run). */
  watermark: string | null;
  feed_run: FeedRun | null;
  /** The newest COMPLETED run with a file (`latestLink`). */
  latest_task_id: string | null;
  /** Whether a secret permalink to the latest file is on. */
  permalink: boolean;
  /** The destinations each run's file is delivered to, under `path_template`. */
  destinations: string[];
  path_template: string | null;
  created_at: string;
  updated_at: string;
}

/** A page of the caller's schedules, newest first. */
export interface ScheduleList {
  items: ScheduleView[];
  next_token: string | null;
}

/** A task a schedule started: a TaskView with its schedule and the firing it ran for. */
export type ScheduleRun = TaskView & { schedule_id?: string | null; scheduled_for?: string | null };

/** A page of a schedule's runs, newest first. */
export interface ScheduleRunList {
  items: ScheduleRun[];
  next_token: string | null;
}

/** One message local mode's embedded SES received. */
export interface MailMessage {
  id: string;
  sent_at: string;
  from: string;
  to: string[];
  subject: string;
  text: string;
}

/** What a schedule's cron or interval says, for people: `0 8 * * 1`, `every 30 minutes`. */
export function describeTiming(schedule: Pick<ScheduleView, "cron" | "every">): string {
  if (schedule.cron) return schedule.cron;
  for (const unit of ["minutes", "hours", "days"] as const) {
    const count = schedule.every?.[unit];
    if (typeof count === "number") return `every ${count} ${count === 1 ? unit.slice(0, -1) : unit}`;
  }
  return "-";
}
