/** The typed client: the API's calls (openapi-fetch over the generated types) and watch(). */

import createClient, { type Client } from "openapi-fetch";

import { Backoff, type BackoffPolicy, SEED_BACKOFF, sleep } from "./backoff.js";
import type {
  DestinationList,
  DestinationPatch,
  DestinationRequest,
  DestinationView,
  VerificationView,
} from "./destinations.js";
import { ApiError, StreamError, WatchTimeoutError } from "./errors.js";
import { isTerminal, polledEvent, type StreamTicket, type TaskEvent, type TaskView } from "./events.js";
import { PushConnection, StreamUnavailableError, type WebSocketConstructor } from "./push.js";
import type {
  MailMessage,
  Permalink,
  ScheduleChanges,
  ScheduleList,
  ScheduleRequest,
  ScheduleRunList,
  ScheduleView,
} from "./schedules.js";
import type { components, operations, paths } from "./schema.js";

/** A submission of any export type (the service checks the filters against the type's schema). */
export type ExportRequest = components["schemas"]["ExportRequest"];
type SubmitBody = NonNullable<operations["submit_v1_exports_post"]["requestBody"]>["content"]["application/json"];
/** A submission of one of the export types the document was generated from, filters typed. */
export type TypedExportRequest = SubmitBody;
export type ExportAccepted = components["schemas"]["ExportAccepted"];
export type ExportFormat = components["schemas"]["ExportFormat"];
export type ExportTypeView = components["schemas"]["ExportTypeView"];
export type CallerView = components["schemas"]["CallerView"];
export type TaskList = components["schemas"]["TaskList"];
export type ListQuery = NonNullable<operations["list_exports_v1_exports_get"]["parameters"]["query"]>;

export interface ClientOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:8000` (`make run`) or the stack's `ApiUrl`. */
  baseUrl: string;
  /** The bearer token, or a function that returns a current one (called for every request). */
  token: string | (() => string | Promise<string>);
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** The WebSocket class for watch(): the global one by default (browsers); pass `ws`'s in
   * Node 20, which has none. null: poll only. */
  WebSocket?: WebSocketConstructor | null;
  /** How long submit() and retry() wait out 429 refusals in all, in seconds (default 600; 0:
   * throw the ApiError at once). Each wait is the `Retry-After` plus up to half again at random
   * (the backoff for a gateway's 429, which has none). */
  waitForCapacitySec?: number;
  /** Told before each wait for capacity: the refusal (its `estimate`) and the seconds to wait. */
  onRefused?: (refusal: ApiError, seconds: number) => void;
  /** The jitter's random numbers in [0, 1) (default Math.random). */
  random?: () => number;
  /** The waits' timer (default: a real one). */
  sleep?: (ms: number) => Promise<void>;
}

/** How long submit() and retry() wait out 429 refusals by default, in seconds. */
export const DEFAULT_CAPACITY_WAIT_SEC = 600;

export interface WatchOptions {
  /** Stops the watch: the iterator throws the signal's reason. */
  signal?: AbortSignal;
  /** Polling waits (default: the seeds', 1 s doubling to 30 s, giving up after 5 minutes). */
  backoff?: BackoffPolicy;
}

/** A file to download: a short-lived presigned link and the file's name. */
export interface DownloadLink {
  url: string;
  fileName: string | null;
}

/** The exports API. One instance per user (token); watch()es share one WebSocket. */
export class ExportsClient {
  private readonly http: Client<paths>;
  private readonly push: PushConnection | null;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly baseUrl: string;
  private readonly token: ClientOptions["token"];
  private readonly capacity: Required<Pick<ClientOptions, "waitForCapacitySec" | "random" | "sleep">> & {
    onRefused: ClientOptions["onRefused"] | undefined;
  };

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.capacity = {
      waitForCapacitySec: options.waitForCapacitySec ?? DEFAULT_CAPACITY_WAIT_SEC,
      onRefused: options.onRefused,
      random: options.random ?? Math.random,
      sleep: options.sleep ?? ((ms) => sleep(ms)),
    };
    // Late-bound: a browser's fetch must be called on the window.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.http = createClient<paths>({ baseUrl: this.baseUrl, fetch: this.fetchImpl });
    this.http.use({
      onRequest: async ({ request }) => {
        request.headers.set("Authorization", `Bearer ${await this.currentToken()}`);
        return request;
      },
    });
    const WebSocketImpl =
      options.WebSocket === undefined
        ? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket ?? null
        : options.WebSocket;
    this.push = WebSocketImpl ? new PushConnection(() => this.streamTicket(), WebSocketImpl) : null;
  }

  /** Who the token says is asking, and what the export types bind from it (a tenant id). */
  async me(): Promise<CallerView> {
    return ok(this.http.GET("/v1/me"));
  }

  /** The export types the caller may use, with their formats and filter schemas. */
  async exportTypes(): Promise<ExportTypeView[]> {
    return (await ok(this.http.GET("/v1/export-types"))).items;
  }

  /** One export type (its filters' JSON Schema is `filters_schema`). */
  async exportType(name: string): Promise<ExportTypeView> {
    return ok(this.http.GET("/v1/export-types/{name}", { params: { path: { name } } }));
  }

  /** Submit an export; an identical active one answers with that task (`deduplicated`). A 429
   * is waited out (see `waitForCapacitySec`). */
  async submit(request: ExportRequest | TypedExportRequest): Promise<ExportAccepted> {
    // The document's body is the union of its own types; a deployment serves types of its own.
    return this.waitingForCapacity(() => ok(this.http.POST("/v1/exports", { body: request as SubmitBody })));
  }

  /** One of the caller's tasks. */
  async get(taskId: string): Promise<TaskView> {
    return ok(this.http.GET("/v1/exports/{task_id}", { params: { path: { task_id: taskId } } }));
  }

  /** A page of the caller's tasks, newest first (`next_token` for the next page). */
  async list(query: ListQuery = {}): Promise<TaskList> {
    return ok(this.http.GET("/v1/exports", { params: { query } }));
  }

  /** Cancel a task that has not ended. */
  async cancel(taskId: string): Promise<TaskView> {
    return ok(this.http.POST("/v1/exports/{task_id}/cancel", { params: { path: { task_id: taskId } } }));
  }

  /** Start a failed, timed-out or cancelled task again, as a new task (a 429 is waited out). */
  async retry(taskId: string): Promise<ExportAccepted> {
    return this.waitingForCapacity(() =>
      ok(this.http.POST("/v1/exports/{task_id}/retry", { params: { path: { task_id: taskId } } })),
    );
  }

  /** Try a completed task's FAILED delivery to `destinationId` again (the same file, a new round
   * of attempts): answers the task with that delivery PENDING again. An ApiError 409 while it is
   * pending (`DELIVERY_IN_PROGRESS`) or once delivered (`DELIVERY_ALREADY_DELIVERED`), 410
   * (`FILE_EXPIRED`) once the file has expired. */
  async retryDelivery(taskId: string, destinationId: string): Promise<TaskView> {
    return ok(
      this.http.POST("/v1/exports/{task_id}/deliveries/{destination_id}/retry", {
        params: { path: { task_id: taskId, destination_id: destinationId } },
      }),
    );
  }

  /** `send()`, again after each 429 while the waits add up to at most `waitForCapacitySec` (a
   * refused submit created nothing, so sending it again is safe). */
  private async waitingForCapacity<T>(send: () => Promise<T>): Promise<T> {
    const { waitForCapacitySec, onRefused, random, sleep: wait } = this.capacity;
    const backoff = new Backoff({ ...SEED_BACKOFF, giveUpMs: Number.POSITIVE_INFINITY });
    let waitedSec = 0;
    for (;;) {
      try {
        return await send();
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 429) throw error;
        const baseSec = error.retryAfterSec ?? (backoff.next() ?? SEED_BACKOFF.maxMs) / 1000;
        const seconds = baseSec * (1 + 0.5 * random());
        if (waitForCapacitySec <= 0 || waitedSec + seconds > waitForCapacitySec) throw error;
        onRefused?.(error, seconds);
        await wait(seconds * 1000);
        waitedSec += seconds;
      }
    }
  }

  /** The presigned link of a completed task's file (409 while it has none). */
  async downloadLink(taskId: string): Promise<DownloadLink> {
    const { response, error } = await this.http.GET("/v1/exports/{task_id}/download", {
      params: { path: { task_id: taskId } },
      redirect: "manual",
    });
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      return { url: location, fileName: null };
    }
    // A browser hides a redirect's target from scripts (an opaque redirect): the task carries it.
    if (response.type === "opaqueredirect") {
      const task = await this.get(taskId);
      if (task.download_url) return { url: task.download_url, fileName: task.file_name ?? null };
    }
    throw await ApiError.from(response, error);
  }

  /** A completed task's file, fetched (in a browser, the bucket's CORS must allow the page). */
  async download(taskId: string): Promise<Response> {
    const link = await this.downloadLink(taskId);
    const response = await this.fetchImpl(link.url);
    if (!response.ok) throw await ApiError.from(response);
    return response;
  }

  /** A single-use ticket for the push stream (POST /v1/stream-tickets). */
  async streamTicket(): Promise<StreamTicket> {
    const response = await this.fetchImpl(`${this.baseUrl}/v1/stream-tickets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await this.currentToken()}` },
    });
    // No such route: this API offers no push stream.
    if (response.status === 404 || response.status === 405) {
      throw new StreamUnavailableError("this API has no push stream", false);
    }
    if (response.status !== 201) throw await ApiError.from(response);
    return (await response.json()) as StreamTicket;
  }

  /**
   * The task's events until it ends: its current state first, then every status change and
   * progress step. Pushed over the WebSocket when the API offers one (no requests while it is
   * up; after a drop it subscribes again and skips what it already saw); polled with the seeds'
   * backoff otherwise, or while the socket cannot connect. Throws WatchTimeoutError after about
   * five minutes of polling, ApiError / StreamError when the task is not the caller's.
   */
  async *watch(taskId: string, options: WatchOptions = {}): AsyncGenerator<TaskEvent, void, undefined> {
    const { signal } = options;
    const waits = new Backoff(options.backoff ?? SEED_BACKOFF);
    const seen = { seq: Number.NEGATIVE_INFINITY };
    let lastPolled: string | null = null;
    let pushOffered = this.push !== null;
    for (;;) {
      signal?.throwIfAborted();
      if (pushOffered) {
        const outcome = yield* this.pushed(taskId, seen, signal);
        if (outcome === "ended") return;
        if (outcome === "unavailable") pushOffered = false;
        if (outcome === "dropped") {
          waits.reset();
          continue;
        }
      }
      // Polling: the socket is not there (or just failed to connect, tried again after the wait).
      const view = await this.get(taskId);
      const state = JSON.stringify([view.status, view.progress, view.rows_written, view.attempt]);
      if (state !== lastPolled) {
        lastPolled = state;
        yield polledEvent(view);
      }
      if (isTerminal(view.status)) return;
      const wait = waits.next();
      if (wait === null) throw new WatchTimeoutError(taskId, waits.waited);
      await sleep(wait, signal);
    }
  }

  /** Create a schedule (201): the export runs at each firing of its cron or interval, in its
   * zone. `idempotencyKey`: a repeated create answers with the schedule the first one made. */
  async createSchedule(request: ScheduleRequest, options: { idempotencyKey?: string } = {}): Promise<ScheduleView> {
    const headers: Record<string, string> = options.idempotencyKey ? { "Idempotency-Key": options.idempotencyKey } : {};
    return this.call<ScheduleView>("POST", "/v1/schedules", { body: request, headers });
  }

  /** A page of the caller's schedules, newest first (`next_token` for the next page). */
  async listSchedules(query: { limit?: number; next_token?: string } = {}): Promise<ScheduleList> {
    return this.call<ScheduleList>("GET", `/v1/schedules${queryString(query)}`);
  }

  /** All the caller's schedules, newest first, fetching pages as the iteration goes. */
  async *schedules(pageSize?: number): AsyncGenerator<ScheduleView, void, undefined> {
    let nextToken: string | null = null;
    do {
      const page: ScheduleList = await this.listSchedules({
        ...(pageSize === undefined ? {} : { limit: pageSize }),
        ...(nextToken === null ? {} : { next_token: nextToken }),
      });
      yield* page.items;
      nextToken = page.next_token;
    } while (nextToken);
  }

  /** One of the caller's schedules (another's is a 404, `SCHEDULE_NOT_FOUND`). */
  async getSchedule(scheduleId: string): Promise<ScheduleView> {
    return this.call<ScheduleView>("GET", schedulePath(scheduleId));
  }

  /** Change what is given (validated like a create). */
  async updateSchedule(scheduleId: string, changes: ScheduleChanges): Promise<ScheduleView> {
    return this.call<ScheduleView>("PATCH", schedulePath(scheduleId), { body: changes });
  }

  /** Stop the firings (`PAUSED_BY_USER`) until resumed. */
  async pauseSchedule(scheduleId: string): Promise<ScheduleView> {
    return this.updateSchedule(scheduleId, { state: "PAUSED" });
  }

  /** Fire again; clears the pause's reason and the count of consecutive failures. */
  async resumeSchedule(scheduleId: string): Promise<ScheduleView> {
    return this.updateSchedule(scheduleId, { state: "ACTIVE" });
  }

  /** Delete the schedule (204); its past runs stay the caller's tasks. */
  async deleteSchedule(scheduleId: string): Promise<void> {
    await this.call<null>("DELETE", schedulePath(scheduleId));
  }

  /** Run the schedule's export now, as a new task (202, as a submit). */
  async runSchedule(scheduleId: string): Promise<ExportAccepted> {
    return this.call<ExportAccepted>("POST", `${schedulePath(scheduleId)}/run`);
  }

  /** The presigned link of the file of the schedule's newest COMPLETED run (404,
   * `NO_LATEST_FILE`, while it has none). */
  async latestLink(scheduleId: string): Promise<DownloadLink> {
    const schedule = await this.getSchedule(scheduleId);
    if (schedule.latest_task_id === null) {
      const response = await this.fetchImpl(`${this.baseUrl}${schedulePath(scheduleId)}/latest`, {
        headers: { Authorization: `Bearer ${await this.currentToken()}`, Accept: "application/json" },
        redirect: "manual",
      });
      throw await ApiError.from(response);
    }
    return this.downloadLink(schedule.latest_task_id);
  }

  /** Turn on (or rotate) the schedule's secret permalink; its URL is shown once. */
  async createPermalink(scheduleId: string): Promise<Permalink> {
    return this.call<Permalink>("POST", `${schedulePath(scheduleId)}/permalink`);
  }

  /** Revoke the permalink: its URL stops working at once. */
  async revokePermalink(scheduleId: string): Promise<void> {
    await this.call<null>("DELETE", `${schedulePath(scheduleId)}/permalink`);
  }

  /** A page of the tasks the schedule started, newest first (GET /v1/exports?schedule_id=). */
  async scheduleRuns(scheduleId: string, query: { limit?: number; next_token?: string } = {}): Promise<ScheduleRunList> {
    return this.call<ScheduleRunList>("GET", `/v1/exports${queryString({ schedule_id: scheduleId, ...query })}`);
  }

  /** Local mode only: the mail its embedded SES received, newest first (404 elsewhere). */
  async mailbox(): Promise<MailMessage[]> {
    return (await this.call<{ items: MailMessage[] }>("GET", "/local/mailbox")).items;
  }

  /** Create a destination of the caller's tenant (201). The answer shows an SFTP key
   * destination's `public_key` and an S3 one's `trust_policy` this once: keep them.
   * `idempotencyKey`: a repeated create answers with the destination the first one made. */
  async createDestination(request: DestinationRequest, options: { idempotencyKey?: string } = {}): Promise<DestinationView> {
    const headers: Record<string, string> = options.idempotencyKey ? { "Idempotency-Key": options.idempotencyKey } : {};
    return ok(this.http.POST("/v1/destinations", { body: request, headers }));
  }

  /** A page of the tenant's destinations the caller may use (a manager: all), newest first. */
  async listDestinations(query: { limit?: number; next_token?: string } = {}): Promise<DestinationList> {
    return ok(this.http.GET("/v1/destinations", { params: { query } }));
  }

  /** All of them, fetching pages as the iteration goes. */
  async *destinations(pageSize?: number): AsyncGenerator<DestinationView, void, undefined> {
    let nextToken: string | null | undefined = null;
    do {
      const page: DestinationList = await this.listDestinations({
        ...(pageSize === undefined ? {} : { limit: pageSize }),
        ...(nextToken ? { next_token: nextToken } : {}),
      });
      yield* page.items;
      nextToken = page.next_token;
    } while (nextToken);
  }

  /** One destination (another tenant's is a 404). */
  async getDestination(destinationId: string): Promise<DestinationView> {
    return ok(this.http.GET("/v1/destinations/{destination_id}", destinationParams(destinationId)));
  }

  /** Change what is given (name, path or prefix, password, host key, encryption, use). */
  async updateDestination(destinationId: string, changes: DestinationPatch): Promise<DestinationView> {
    return ok(
      this.http.PATCH("/v1/destinations/{destination_id}", { ...destinationParams(destinationId), body: changes }),
    );
  }

  /** Delete the destination and its secret (204). */
  async deleteDestination(destinationId: string): Promise<void> {
    const { error, response } = await this.http.DELETE("/v1/destinations/{destination_id}", destinationParams(destinationId));
    if (!response.ok) throw await ApiError.from(response, error);
  }

  /** Pin the SFTP host key the service was offered, by the fingerprint it showed. */
  async confirmDestination(destinationId: string, hostKeyFingerprint: string): Promise<DestinationView> {
    return ok(
      this.http.POST("/v1/destinations/{destination_id}/confirm", {
        ...destinationParams(destinationId),
        body: { host_key_fingerprint: hostKeyFingerprint },
      }),
    );
  }

  /** Write and remove a probe file: `ok`, or the step that failed and what to do. */
  async verifyDestination(destinationId: string): Promise<VerificationView> {
    return ok(this.http.POST("/v1/destinations/{destination_id}/verify", destinationParams(destinationId)));
  }

  /** Close the push stream's socket (a Node process then exits when nothing else runs). */
  close(): void {
    this.push?.close();
  }

  /** One subscription's events. Returns why it stopped: the task ended, the socket dropped after
   * events (subscribe again), it failed to connect (poll, then try again), or there is no push. */
  private async *pushed(
    taskId: string,
    seen: { seq: number },
    signal: AbortSignal | undefined,
  ): AsyncGenerator<TaskEvent, "ended" | "dropped" | "failed" | "unavailable", undefined> {
    const queue = new Inbox<TaskEvent | StreamError | "closed">();
    let unsubscribe: () => void;
    try {
      unsubscribe = await this.push!.subscribe(taskId, {
        event: (event) => queue.put(event),
        error: (error) => queue.put(error),
        closed: () => queue.put("closed"),
      });
    } catch (error) {
      if (error instanceof StreamUnavailableError) return error.offered ? "failed" : "unavailable";
      // No ticket this time (429, 503, ...): poll meanwhile; a poll reports what concerns the task.
      if (error instanceof ApiError) return "failed";
      throw error;
    }
    let heard = false;
    try {
      for (;;) {
        const item = await queue.take(signal);
        // A socket that drops before saying anything is as good as one that did not connect.
        if (item === "closed") return heard ? "dropped" : "failed";
        if (item instanceof StreamError) throw item;
        heard = true;
        if (item.seq !== null && item.seq <= seen.seq) continue;
        seen.seq = item.seq ?? seen.seq;
        yield item;
        if (isTerminal(item.data.status)) return "ended";
      }
    } finally {
      unsubscribe();
    }
  }

  /** A JSON call outside the generated document's routes; an error answer is thrown as an ApiError. */
  private async call<T>(
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<T> {
    const headers: Record<string, string> = {
      Accept: "application/json",
      ...options.headers,
      Authorization: `Bearer ${await this.currentToken()}`,
    };
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    if (!response.ok) throw await ApiError.from(response);
    return (response.status === 204 ? null : await response.json()) as T;
  }

  private async currentToken(): Promise<string> {
    return typeof this.token === "function" ? this.token() : this.token;
  }
}

function destinationParams(destinationId: string): { params: { path: { destination_id: string } } } {
  return { params: { path: { destination_id: destinationId } } };
}

function schedulePath(scheduleId: string): string {
  return `/v1/schedules/${encodeURIComponent(scheduleId)}`;
}

/** `?a=1&b=x` of the given values (none: ""). */
function queryString(query: Record<string, string | number | undefined>): string {
  const given = Object.entries(query).filter((entry): entry is [string, string | number] => entry[1] !== undefined);
  return given.length === 0 ? "" : `?${new URLSearchParams(given.map(([key, value]) => [key, String(value)])).toString()}`;
}

/** The data of an openapi-fetch answer, or its error envelope thrown as an ApiError. */
async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined) return data;
  throw await ApiError.from(response, error);
}

/** A queue one consumer awaits. */
class Inbox<T> {
  private readonly items: T[] = [];
  private waiter: ((item: T) => void) | null = null;

  put(item: T): void {
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter(item);
    } else {
      this.items.push(item);
    }
  }

  take(signal?: AbortSignal): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        this.waiter = null;
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiter = (item) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(item);
      };
    });
  }
}
