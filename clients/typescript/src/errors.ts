/** Errors as values: every failure the client reports is one of these classes. */

import type { components } from "./schema.js";

export type ErrorDetail = components["schemas"]["ErrorDetail"];
export type FieldProblem = components["schemas"]["FieldProblem"];
export type RefusalEstimate = components["schemas"]["RefusalEstimate"];

/** The base of every error this client throws. */
export class ExportsError extends Error {
  override name = "ExportsError";
}

/** An error answer of the API: its HTTP status and the error envelope's fields. */
export class ApiError extends ExportsError {
  override name = "ApiError";
  /** The stable code of the envelope (`TASK_NOT_FOUND`, `VALIDATION_ERROR`, ...). */
  readonly code: string;
  /** The field a bad input names, if any. */
  readonly field: string | null;
  /** Every invalid field when there are several (the first is `field`). */
  readonly problems: readonly FieldProblem[];
  /** Seconds to wait before trying again, from `Retry-After` (429 and 503). */
  readonly retryAfterSec: number | null;
  /** What a capacity refusal (429 `WOULD_TIME_OUT`) was estimated on. */
  readonly estimate: RefusalEstimate | null;

  constructor(
    readonly status: number,
    detail: ErrorDetail,
    retryAfterSec: number | null = null,
  ) {
    super(detail.message);
    this.code = detail.code;
    this.field = detail.field ?? null;
    this.problems = detail.errors ?? [];
    this.retryAfterSec = retryAfterSec;
    this.estimate = detail.estimate ?? null;
  }

  /** The error of a failed response, from its envelope or, when it has none, from its status. */
  static async from(response: Response, body?: unknown): Promise<ApiError> {
    const parsed = body === undefined ? await response.json().catch(() => undefined) : body;
    const retryAfter = Number(response.headers.get("retry-after"));
    const retry = Number.isFinite(retryAfter) && response.headers.has("retry-after") ? retryAfter : null;
    if (isEnvelope(parsed)) return new ApiError(response.status, parsed.error, retry);
    return new ApiError(response.status, { code: `HTTP_${response.status}`, message: response.statusText }, retry);
  }
}

/** The push stream refused a subscription (`{"type": "error"}`), e.g. `TASK_NOT_FOUND`. */
export class StreamError extends ExportsError {
  override name = "StreamError";
  constructor(
    readonly code: string,
    message: string,
    readonly taskId: string | null,
  ) {
    super(message);
  }
}

/** watch() polled for about five minutes (the seeds' advice) and the task did not end. */
export class WatchTimeoutError extends ExportsError {
  override name = "WatchTimeoutError";
  constructor(
    readonly taskId: string,
    readonly waitedMs: number,
  ) {
    super(`task ${taskId} did not end within ${Math.round(waitedMs / 1000)} s of polling`);
  }
}

function isEnvelope(value: unknown): value is { error: ErrorDetail } {
  if (typeof value !== "object" || value === null || !("error" in value)) return false;
  const error = (value as { error: unknown }).error;
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as ErrorDetail).code === "string" &&
    typeof (error as ErrorDetail).message === "string"
  );
}
