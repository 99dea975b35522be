/** The export console: sign in with a token, submit an export from a form generated from the
 * type's filter schema, follow every task live (pushed events, or polling where the API has no
 * push stream), cancel, retry, download; and the Schedules view (#schedules, schedules-page.ts). */

import { ApiError, ExportsClient, type ExportTypeView, isTerminal, type TaskView } from "@exports/client";

import { loadDestinationPicker, readDestinationChoice } from "./destination-picker.js";
import { DestinationsView } from "./destinations-page.js";
import { errorText, taskMatches, whoText } from "./facts.js";
import { fillFileOptions, readFileOptions, setLocales } from "./file-options.js";
import { markInvalid, type ObjectSchema, readFilters, renderFilters } from "./filters-form.js";
import { SchedulesView } from "./schedules-page.js";
import { type Action, createRow, shortId, updateRow } from "./task-row.js";

const LIST_LIMIT = 50;
// How often, and for how long, a COMPLETED task's pending deliveries are read again.
const DELIVERY_POLL_MS = 2_000;
const DELIVERY_FOLLOW_MS = 10 * 60_000;

function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

/** The API's base URL: the page's meta tag, or the page's own origin. */
function apiUrl(): string {
  const configured = document.querySelector<HTMLMetaElement>('meta[name="exports-api-url"]')?.content.trim();
  return configured || window.location.origin;
}

/** A signed-in user's session: the client, the rows, the watches (stopped on sign-out). */
class Session {
  readonly client: ExportsClient;
  private readonly stop = new AbortController();
  private readonly rows = new Map<string, HTMLLIElement>();
  // The latest state of each listed task, which the history's filter reads.
  private readonly tasks = new Map<string, TaskView>();
  private readonly watching = new Set<string>();
  private readonly announced = new Map<string, string>();
  private types: ExportTypeView[] = [];
  /** Who is signed in: the user, and what the types bind from their token (a tenant). */
  who = "";
  private revealing: string | null = null;
  schedules: SchedulesView | null = null;
  destinations: DestinationsView | null = null;

  constructor(token: string) {
    this.client = new ExportsClient({
      baseUrl: apiUrl(),
      token,
      onRefused: (refused, seconds) => this.waitingForCapacity(refused, seconds),
    });
  }

  /** Said while a refused submit waits its turn: the client submits again by itself. */
  private waitingForCapacity(refused: ApiError, seconds: number): void {
    const estimate = refused.estimate;
    const why = estimate
      ? `it would finish in about ${estimate.estimated_completion_sec} s, after its ${estimate.timeout_sec} s deadline`
      : "too many exports at once";
    const text = `The service is at capacity (${why}): submitting again in ${Math.ceil(seconds)} s.`;
    byId("form-error").textContent = text;
    this.announce(text);
  }

  async start(): Promise<void> {
    this.who = whoText(await this.client.me());
    this.types = await this.client.exportTypes();
    const select = byId<HTMLSelectElement>("export-type");
    select.replaceChildren(
      ...this.types.map((type) => Object.assign(document.createElement("option"), { value: type.name, textContent: type.name })),
    );
    this.showType();
    this.schedules = new SchedulesView(this.client, this.types);
    this.destinations = new DestinationsView(this.client);
    const page = await this.client.list({ limit: LIST_LIMIT });
    for (const task of [...page.items].reverse()) this.show(task);
    for (const task of page.items) this.follow(task.task_id);
    this.refreshEmpty();
  }

  /** The export form's choice of destinations (again after the Destinations view changed them). */
  loadDestinations(): Promise<void> {
    return loadDestinationPicker(byId<HTMLFieldSetElement>("export-destinations"), this.client, "export");
  }

  end(): void {
    this.schedules?.hide();
    this.destinations?.hide();
    this.stop.abort(new DOMException("signed out", "AbortError"));
    this.client.close();
    byId("tasks").replaceChildren();
    byId<HTMLInputElement>("task-search").value = "";
    byId<HTMLSelectElement>("task-status").value = "";
    byId("task-filter-count").textContent = "";
    byId("announcer").textContent = "";
  }

  /** The chosen type's description, filters and formats. */
  showType(): void {
    const name = byId<HTMLSelectElement>("export-type").value;
    const type = this.types.find((candidate) => candidate.name === name);
    if (!type) return;
    byId("type-description").textContent = type.description;
    renderFilters(byId<HTMLFieldSetElement>("filters"), type.filters_schema as ObjectSchema);
    byId<HTMLSelectElement>("format").replaceChildren(
      ...type.formats.map((format) => Object.assign(document.createElement("option"), { value: format, textContent: format })),
    );
    setLocales(byId<HTMLFieldSetElement>("file-options"), type.locales);
  }

  async submit(form: HTMLFormElement): Promise<void> {
    const error = byId("form-error");
    error.textContent = "";
    markInvalid(form, null);
    try {
      const callbackUrl = byId<HTMLInputElement>("callback-url").value.trim();
      const accepted = await this.client.submit({
        export_type: byId<HTMLSelectElement>("export-type").value,
        format: byId<HTMLSelectElement>("format").value as "csv",
        filters: readFilters(byId<HTMLFieldSetElement>("filters")),
        ...(callbackUrl ? { callback_url: callbackUrl } : {}),
        ...(readFileOptions(byId<HTMLFieldSetElement>("file-options")) as Record<string, never>),
        ...readDestinationChoice(byId<HTMLFieldSetElement>("export-destinations")),
      });
      error.textContent = "";
      this.announce(`Export ${shortId(accepted.task_id)} submitted`);
      this.follow(accepted.task_id);
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = errorText(failure);
      markInvalid(form, failure.field);
    }
  }

  private async act(action: Action, task: TaskView, destinationId?: string): Promise<void> {
    const row = this.rows.get(task.task_id);
    try {
      if (action === "cancel") {
        this.show(await this.client.cancel(task.task_id));
      } else if (action === "retry-delivery" && destinationId) {
        const retried = await this.client.retryDelivery(task.task_id, destinationId);
        row?.querySelector(".task-error")?.replaceChildren();
        this.show(retried);
        this.announce(`Delivery of ${shortId(task.task_id)} to ${destinationId} retried`);
        await this.followDeliveries(retried);
      } else {
        const accepted = await this.client.retry(task.task_id);
        this.announce(`Retry of ${shortId(task.task_id)} submitted as ${shortId(accepted.task_id)}`);
        this.follow(accepted.task_id);
      }
    } catch (failure) {
      if (!(failure instanceof ApiError) || !row) throw failure;
      row.querySelector(".task-error")!.textContent = `${failure.code}: ${failure.message}`;
    }
  }

  /** Bring ``taskId``'s row into view and focus it (a schedule's run linked from its list);
   * a task not listed yet is followed, and focused once its first state comes. */
  reveal(taskId: string): void {
    const row = this.rows.get(taskId);
    if (row) {
      row.scrollIntoView({ block: "center" });
      row.focus();
      return;
    }
    this.revealing = taskId;
    this.follow(taskId);
  }

  /** Follow ``taskId`` until it ends (once per task). */
  private follow(taskId: string): void {
    if (this.watching.has(taskId)) return;
    this.watching.add(taskId);
    void (async () => {
      try {
        let last: TaskView | null = null;
        for await (const event of this.client.watch(taskId, { signal: this.stop.signal })) {
          last = event.data;
          this.show(event.data);
          byId("transport").textContent =
            event.source === "push" ? "Live: pushed by the server." : "Live: checking for changes (no push stream).";
        }
        if (last) await this.followDeliveries(last);
      } catch (failure) {
        if (this.stop.signal.aborted) return;
        const row = this.rows.get(taskId);
        if (row) row.querySelector(".task-error")!.textContent = `not followed any more: ${String(failure)}`;
      } finally {
        this.watching.delete(taskId);
      }
    })();
  }

  /** Deliveries go on after COMPLETED, the watch's last event: read the task again every
   * DELIVERY_POLL_MS until none is PENDING (a delivery's retries end well within the limit). A
   * read from before a retry on request (fewer rounds than shown: a response the browser kept
   * for a few seconds) is not shown: the next one is fresh. */
  private async followDeliveries(task: TaskView): Promise<void> {
    const pending = (view: TaskView): boolean => (view.deliveries ?? []).some((delivery) => (delivery.status ?? "PENDING") === "PENDING");
    const rounds = (view: TaskView): number => (view.deliveries ?? []).reduce((sum, delivery) => sum + (delivery.requested_retries ?? 0), 0);
    const until = Date.now() + DELIVERY_FOLLOW_MS;
    let current = task;
    while (pending(current) && Date.now() < until && !this.stop.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, DELIVERY_POLL_MS));
      if (this.stop.signal.aborted) return;
      const read = await this.client.get(task.task_id);
      if (rounds(read) < rounds(current)) continue;
      current = read;
      this.show(current);
    }
  }

  /** Show only the rows the task history's search and status choose; say how many. */
  applyFilter(): void {
    const search = byId<HTMLInputElement>("task-search").value;
    const status = byId<HTMLSelectElement>("task-status").value;
    let shown = 0;
    for (const [taskId, row] of this.rows) {
      const task = this.tasks.get(taskId);
      row.hidden = task !== undefined && !taskMatches(task, search, status);
      if (!row.hidden) shown += 1;
    }
    const filtering = search.trim() !== "" || status !== "";
    byId("task-filter-count").textContent = filtering ? `${shown} of ${this.rows.size} exports shown` : "";
  }

  /** Add or update the task's row (newest first), and announce status changes and quarters. */
  private show(task: TaskView): void {
    this.tasks.set(task.task_id, task);
    let row = this.rows.get(task.task_id);
    if (row) {
      updateRow(row, task);
    } else {
      row = createRow(task, (action, current, destinationId) => void this.act(action, current, destinationId));
      row.tabIndex = -1;
      this.rows.set(task.task_id, row);
      byId("tasks").prepend(row);
      this.refreshEmpty();
      if (this.revealing === task.task_id) {
        this.revealing = null;
        this.reveal(task.task_id);
      }
    }
    this.applyFilter();
    const milestone = `${task.status} ${Math.floor(task.progress / 25) * 25}`;
    if (this.announced.get(task.task_id) !== milestone) {
      const first = !this.announced.has(task.task_id);
      this.announced.set(task.task_id, milestone);
      // A listed task's first state is not news; a followed task that ended before its first
      // event came (a small export, pushed as its current state on subscribe) is.
      const endedWhileFollowed = isTerminal(task.status) && this.watching.has(task.task_id);
      if (!first || task.status === "PENDING" || endedWhileFollowed) {
        this.announce(`${task.export_type} export ${shortId(task.task_id)}: ${task.status.toLowerCase()}, ${task.progress} %`);
      }
    }
  }

  private announce(message: string): void {
    byId("announcer").textContent = message;
  }

  private refreshEmpty(): void {
    byId("no-tasks").hidden = this.rows.size > 0;
  }
}

let session: Session | null = null;

function signedIn(on: boolean, who = ""): void {
  byId("sign-in").hidden = on;
  byId("sign-out").hidden = !on;
  byId("views").hidden = !on;
  const label = byId("who");
  label.hidden = !on;
  label.textContent = who;
  route();
}

/** Show the view the address asks for: ``#schedules``, ``#destinations``, or the exports
 * (``#exports/<task id>`` brings that task's row into view). */
function route(): void {
  const hash = window.location.hash;
  const view = session === null ? null : hash === "#schedules" ? "schedules" : hash === "#destinations" ? "destinations" : "exports";
  byId("new-export").hidden = view !== "exports";
  byId("tasks-section").hidden = view !== "exports";
  for (const name of ["exports", "schedules", "destinations"]) byId(`view-${name}`).toggleAttribute("aria-current", false);
  if (session === null || view === null) return;
  byId(`view-${view}`).setAttribute("aria-current", "page");
  if (view !== "schedules") session.schedules?.hide();
  if (view !== "destinations") session.destinations?.hide();
  if (view === "schedules") {
    void session.schedules?.show();
    return;
  }
  if (view === "destinations") {
    void session.destinations?.show();
    return;
  }
  void session.loadDestinations();
  const taskId = hash.startsWith("#exports/") ? decodeURIComponent(hash.slice("#exports/".length)) : "";
  if (taskId) session.reveal(taskId);
}

async function signIn(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const input = byId<HTMLInputElement>("token");
  const error = byId("sign-in-error");
  error.textContent = "";
  const candidate = new Session(input.value.trim());
  try {
    await candidate.start();
  } catch (failure) {
    candidate.end();
    error.textContent = failure instanceof ApiError && failure.status === 401 ? "That token is not valid." : String(failure);
    input.focus();
    return;
  }
  session = candidate;
  input.value = "";
  signedIn(true, candidate.who);
  byId<HTMLSelectElement>(window.location.hash === "#schedules" ? "schedule-type" : "export-type").focus();
}

function signOut(): void {
  session?.end();
  session = null;
  signedIn(false);
  byId<HTMLInputElement>("token").focus();
}

function main(): void {
  fillFileOptions(byId<HTMLFieldSetElement>("file-options"), "");
  byId<HTMLFormElement>("sign-in-form").addEventListener("submit", (event) => void signIn(event));
  byId("sign-out").addEventListener("click", signOut);
  byId("export-type").addEventListener("change", () => session?.showType());
  byId("task-search").addEventListener("input", () => session?.applyFilter());
  byId("task-status").addEventListener("change", () => session?.applyFilter());
  window.addEventListener("hashchange", route);
  byId<HTMLFormElement>("export-form").addEventListener("submit", (event) => {
    event.preventDefault();
    void session?.submit(event.currentTarget as HTMLFormElement);
  });
  signedIn(false);
}

main();
