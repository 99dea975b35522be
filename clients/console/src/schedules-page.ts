/** The Schedules view: create a schedule (the type's filters, a relative date window, cron or a
 * fixed interval, a zone, recipients), list the user's schedules with their next and last runs,
 * pause, resume, run now, show a schedule's runs (links to their exports), delete; and local
 * mode's mailbox (what its embedded SES received). */

import {
  ApiError,
  type Every,
  type ExportsClient,
  type ExportTypeView,
  type ScheduleRequest,
  type ScheduleView,
} from "@exports/client";

import { cronPreview } from "./cron-preview.js";
import { loadDestinationPicker, readDestinationChoice } from "./destination-picker.js";
import { fillFileOptions, readFileOptions, setLocales } from "./file-options.js";
import { dateRange, markInvalid, type ObjectSchema, readFilters, renderFilters } from "./filters-form.js";
import {
  createScheduleRow,
  hideDestinationChoice,
  type ScheduleAction,
  scheduleTitle,
  showDestinationChoice,
  showPermalink,
  showRuns,
  updateScheduleRow,
} from "./schedule-row.js";

const LIST_LIMIT = 50;
const RUNS_LIMIT = 20;
// After "Run now", the schedule is read again this often until its "Last run" names the run
// (a schedule records a run when it ends), for at most this many reads (10 minutes).
const LAST_RUN_POLL_MS = 2000;
const LAST_RUN_POLLS = 300;
const FILTER_PREFIX = "schedule-filter";
/** Offered in the zone field; any IANA name the server knows is accepted. */
const COMMON_ZONES = ["Etc/UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"];

function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

/** The browser's own zone, the form's default (Etc/UTC when it has none). */
function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "Etc/UTC";
}

export class SchedulesView {
  private readonly rows = new Map<string, HTMLLIElement>();
  private shown = false;

  constructor(
    private readonly client: ExportsClient,
    private readonly types: readonly ExportTypeView[],
  ) {}

  /** Put the form in, load the schedules and the mailbox. */
  async show(): Promise<void> {
    if (this.shown) return;
    this.shown = true;
    byId("new-schedule").hidden = false;
    byId("schedules-section").hidden = false;
    byId("mailbox-refresh").onclick = () => void this.loadMailbox();
    const template = byId<HTMLTemplateElement>("schedule-form-template");
    byId("new-schedule").append(template.content.cloneNode(true));
    const form = byId<HTMLFormElement>("schedule-form");
    fillFileOptions(byId<HTMLFieldSetElement>("schedule-file-options"), "schedule-");
    const select = byId<HTMLSelectElement>("schedule-type");
    select.replaceChildren(
      ...this.types.map((type) => Object.assign(document.createElement("option"), { value: type.name, textContent: type.name })),
    );
    const zones = new Set([...COMMON_ZONES, browserZone()]);
    byId("time-zones").replaceChildren(...[...zones].map((zone) => Object.assign(document.createElement("option"), { value: zone })));
    byId<HTMLInputElement>("schedule-timezone").value = browserZone();
    select.addEventListener("change", () => this.showType());
    byId("window-choice").addEventListener("change", () => this.showWindow());
    for (const id of ["schedule-cron", "schedule-timezone"]) byId(id).addEventListener("input", () => this.showCronPreview());
    this.showCronPreview();
    for (const radio of form.querySelectorAll<HTMLInputElement>('input[name="timing"]')) {
      radio.addEventListener("change", () => this.showTiming());
    }
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.create(form);
    });
    this.showType();
    this.showTiming();
    await Promise.all([
      this.load(),
      this.loadMailbox(),
      loadDestinationPicker(byId<HTMLFieldSetElement>("schedule-destinations"), this.client, "schedule"),
    ]);
  }

  /** Take the form out and forget the rows (the exports view, or signed out). */
  hide(): void {
    this.shown = false;
    for (const id of ["new-schedule", "schedules-section", "mailbox-section"]) byId(id).hidden = true;
    byId("new-schedule").querySelector("form")?.remove();
    byId("schedules").replaceChildren();
    byId("mailbox").replaceChildren();
    byId("schedules-announcer").textContent = "";
    this.rows.clear();
  }

  private type(): ExportTypeView | undefined {
    const name = byId<HTMLSelectElement>("schedule-type").value;
    return this.types.find((candidate) => candidate.name === name);
  }

  /** The chosen type's filters and formats; the window choice only for a type with a date range. */
  private showType(): void {
    const type = this.type();
    if (!type) return;
    const schema = type.filters_schema as ObjectSchema;
    renderFilters(byId<HTMLFieldSetElement>("schedule-filters"), schema, FILTER_PREFIX);
    byId<HTMLSelectElement>("schedule-format").replaceChildren(
      ...type.formats.map((format) => Object.assign(document.createElement("option"), { value: format, textContent: format })),
    );
    setLocales(byId<HTMLFieldSetElement>("schedule-file-options"), type.locales);
    const range = dateRange(schema);
    byId("schedule-window").hidden = range === null;
    // A feed needs a range of instants (a type's change column); the server has the last word.
    const instants = range !== null && range.every((name) => (schema.properties?.[name] as { format?: string } | undefined)?.format === "date-time");
    const feed = byId<HTMLOptionElement>("window-feed");
    feed.hidden = feed.disabled = !instants;
    const choice = byId<HTMLSelectElement>("window-choice");
    if (!instants && choice.value === "since_last_run") choice.value = "previous_day";
    this.showWindow();
  }

  /** A relative window stands for the type's date range: its date fields are then not asked for. */
  private showWindow(): void {
    const range = this.windowRange();
    const choice = byId<HTMLSelectElement>("window-choice").value;
    byId("window-days-field").hidden = choice !== "last_n_days";
    for (const name of dateRange(this.type()?.filters_schema as ObjectSchema) ?? []) {
      const input = document.getElementById(`${FILTER_PREFIX}-${name}`) as HTMLInputElement | null;
      if (!input) continue;
      const relative = range !== null;
      input.disabled = relative;
      input.closest("div")!.hidden = relative;
    }
  }

  /** The relative window chosen (``last_n_days:7`` …), or null for fixed dates or no range. */
  private windowRange(): string | null {
    if (byId("schedule-window").hidden) return null;
    const choice = byId<HTMLSelectElement>("window-choice").value;
    if (choice === "fixed") return null;
    if (choice === "last_n_days") return `last_n_days:${byId<HTMLInputElement>("window-days").value.trim()}`;
    return choice;
  }

  private showTiming(): void {
    const every = byId<HTMLFormElement>("schedule-form").querySelector<HTMLInputElement>('input[name="timing"]:checked')?.value === "every";
    byId("cron-field").hidden = every;
    byId("every-field").hidden = !every;
    byId<HTMLInputElement>("schedule-cron").required = !every;
  }

  /** The body of POST /v1/schedules the form holds. */
  private request(): ScheduleRequest {
    const type = this.type()!;
    const filters = readFilters(byId<HTMLFieldSetElement>("schedule-filters"));
    const window = this.windowRange();
    const range = dateRange(type.filters_schema as ObjectSchema);
    if (window !== null && range) {
      // Given on the range's start; the server resolves both ends at each firing.
      filters[range[0]] = window;
      delete filters[range[1]];
    }
    const request: ScheduleRequest = {
      export_type: type.name,
      format: byId<HTMLSelectElement>("schedule-format").value as NonNullable<ScheduleRequest["format"]>,
      filters,
      timezone: byId<HTMLInputElement>("schedule-timezone").value.trim(),
    };
    const name = byId<HTMLInputElement>("schedule-name").value.trim();
    if (name) request.name = name;
    const useEvery = byId<HTMLFormElement>("schedule-form").querySelector<HTMLInputElement>('input[name="timing"]:checked')?.value === "every";
    if (useEvery) {
      const count = Number.parseInt(byId<HTMLInputElement>("schedule-every").value, 10);
      const unit = byId<HTMLSelectElement>("schedule-every-unit").value as "minutes" | "hours" | "days";
      request.every = { [unit]: count } as Every;
    } else {
      request.cron = byId<HTMLInputElement>("schedule-cron").value.trim();
    }
    const recipients = byId<HTMLInputElement>("schedule-recipients")
      .value.split(",")
      .map((address) => address.trim())
      .filter(Boolean);
    if (recipients.length > 0) request.recipients = recipients;
    if (byId<HTMLInputElement>("schedule-skip-empty").checked) request.when_empty = "skip";
    const callbackUrl = byId<HTMLInputElement>("schedule-callback-url").value.trim();
    if (callbackUrl) request.callback_url = callbackUrl;
    Object.assign(request, readFileOptions(byId<HTMLFieldSetElement>("schedule-file-options")));
    Object.assign(request, readDestinationChoice(byId<HTMLFieldSetElement>("schedule-destinations")));
    return request;
  }

  private async create(form: HTMLFormElement): Promise<void> {
    const error = byId("schedule-form-error");
    error.textContent = "";
    markInvalid(form, null);
    try {
      const schedule = await this.client.createSchedule(this.request());
      this.showSchedule(schedule);
      this.announce(`Schedule ${scheduleTitle(schedule)} created`);
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = failure.field ? `${failure.field}: ${failure.message}` : failure.message;
      this.markField(form, failure.field);
    }
  }

  /** The field the API named: the window choice when it names the relative window's filter, a
   * filter, or one of the schedule's own fields (``recipients[1]``: the recipients field). */
  private markField(form: HTMLFormElement, field: string | null): void {
    const range = dateRange(this.type()?.filters_schema as ObjectSchema);
    const windowField = range?.some((name) => field === `filters.${name}`) && this.windowRange() !== null;
    if (windowField) {
      markInvalid(form, null);
      const choice = byId<HTMLSelectElement>("window-choice");
      choice.setAttribute("aria-invalid", "true");
      choice.focus();
      return;
    }
    markInvalid(form, field?.startsWith("filters.") ? field : (field?.replace(/\[\d+\]$/, "") ?? null));
  }

  private async load(): Promise<void> {
    const error = byId("schedules-error");
    error.textContent = "";
    try {
      const page = await this.client.listSchedules({ limit: LIST_LIMIT });
      for (const schedule of [...page.items].reverse()) this.showSchedule(schedule);
    } catch (failure) {
      error.textContent = failure instanceof ApiError ? `${failure.code}: ${failure.message}` : String(failure);
    }
    this.refreshEmpty();
  }

  /** Add or update the schedule's row (newest first). */
  private showSchedule(schedule: ScheduleView): void {
    const row = this.rows.get(schedule.schedule_id);
    if (row) {
      updateScheduleRow(row, schedule);
      return;
    }
    const created = createScheduleRow(schedule, (action, current) => void this.act(action, current));
    this.rows.set(schedule.schedule_id, created);
    byId("schedules").prepend(created);
    this.refreshEmpty();
  }

  private async act(action: ScheduleAction, schedule: ScheduleView): Promise<void> {
    const row = this.rows.get(schedule.schedule_id);
    if (!row) return;
    const error = row.querySelector(".schedule-error")!;
    error.textContent = "";
    const confirm = row.querySelector<HTMLButtonElement>('[data-action="confirm-delete"]')!;
    try {
      if (action === "pause") {
        this.showSchedule(await this.client.pauseSchedule(schedule.schedule_id));
        this.announce(`Schedule ${scheduleTitle(schedule)} paused`);
      } else if (action === "resume") {
        this.showSchedule(await this.client.resumeSchedule(schedule.schedule_id));
        this.announce(`Schedule ${scheduleTitle(schedule)} resumed`);
      } else if (action === "run") {
        const accepted = await this.client.runSchedule(schedule.schedule_id);
        this.announce(`Schedule ${scheduleTitle(schedule)} ran as export ${accepted.task_id.slice(-6)}`);
        await this.showRunsOf(row, schedule);
        void this.showLastRunOnceRecorded(schedule.schedule_id, accepted.task_id);
      } else if (action === "runs") {
        await this.showRunsOf(row, schedule);
      } else if (action === "latest") {
        const link = await this.client.latestLink(schedule.schedule_id);
        window.open(link.url, "_blank", "noopener");
      } else if (action === "permalink") {
        const permalink = await this.client.createPermalink(schedule.schedule_id);
        showPermalink(row, permalink.url);
        this.showSchedule(await this.client.getSchedule(schedule.schedule_id));
        this.announce(`Schedule ${scheduleTitle(schedule)} has a new permalink`);
      } else if (action === "revoke-permalink") {
        await this.client.revokePermalink(schedule.schedule_id);
        showPermalink(row, null);
        this.showSchedule(await this.client.getSchedule(schedule.schedule_id));
        this.announce(`Schedule ${scheduleTitle(schedule)}'s permalink revoked`);
      } else if (action === "edit-destinations") {
        const fieldset = row.querySelector<HTMLFieldSetElement>(".row-destinations")!;
        await loadDestinationPicker(fieldset, this.client, `schedule-${schedule.schedule_id}`);
        showDestinationChoice(row, fieldset, schedule);
      } else if (action === "save-destinations") {
        const choice = readDestinationChoice(row.querySelector<HTMLFieldSetElement>(".row-destinations")!);
        // None chosen: no destinations (a template alone would need some); else the template or the default.
        const changes = choice.destinations ? { destinations: choice.destinations, path_template: choice.path_template ?? null } : { destinations: [] };
        this.showSchedule(await this.client.updateSchedule(schedule.schedule_id, changes));
        hideDestinationChoice(row);
        this.announce(`Schedule ${scheduleTitle(schedule)} delivers to ${choice.destinations?.length ?? 0} destinations`);
      } else if (action === "delete") {
        // Two steps: a schedule (with its recipients) is not deleted by one stray click.
        confirm.hidden = false;
        confirm.focus();
      } else {
        await this.client.deleteSchedule(schedule.schedule_id);
        row.remove();
        this.rows.delete(schedule.schedule_id);
        this.refreshEmpty();
        this.announce(`Schedule ${scheduleTitle(schedule)} deleted`);
      }
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = `${failure.code}: ${failure.message}`;
    }
  }

  /** Read the schedule again until its "Last run" is the run ``taskId`` (started by Run now),
   * showing each state read and then the runs; stops when the view is left or the schedule goes. */
  private async showLastRunOnceRecorded(scheduleId: string, taskId: string): Promise<void> {
    for (let read = 0; read < LAST_RUN_POLLS && this.shown; read += 1) {
      await new Promise((resolve) => setTimeout(resolve, LAST_RUN_POLL_MS));
      if (!this.shown || !this.rows.has(scheduleId)) return;
      let schedule: ScheduleView;
      try {
        schedule = await this.client.getSchedule(scheduleId);
      } catch (failure) {
        if (failure instanceof ApiError) return;
        throw failure;
      }
      this.showSchedule(schedule);
      if (schedule.last_run?.task_id === taskId) {
        const row = this.rows.get(scheduleId);
        if (row) await this.showRunsOf(row, schedule);
        return;
      }
    }
  }

  /** The next firings of the cron expression in the zone, as the user types them. */
  private showCronPreview(): void {
    const cron = byId<HTMLInputElement>("schedule-cron").value;
    const zone = byId<HTMLInputElement>("schedule-timezone").value.trim();
    byId("cron-preview").textContent = cronPreview(cron, zone, Date.now());
  }

  private async showRunsOf(row: HTMLLIElement, schedule: ScheduleView): Promise<void> {
    const runs = await this.client.scheduleRuns(schedule.schedule_id, { limit: RUNS_LIMIT });
    showRuns(row, runs.items, schedule.timezone);
  }

  /** The mailbox where the deployment has one (local mode); hidden elsewhere. */
  async loadMailbox(): Promise<void> {
    const section = byId("mailbox-section");
    let messages;
    const error = byId("mailbox-error");
    error.textContent = "";
    try {
      messages = await this.client.mailbox();
    } catch (failure) {
      if (failure instanceof ApiError && (failure.status === 404 || failure.status === 403)) {
        section.hidden = true;
        return;
      }
      // Offered but failing (or unreachable): say so where the mail would be.
      section.hidden = !this.shown;
      error.textContent = `The mailbox could not be read: ${failure instanceof ApiError ? `${failure.code}: ${failure.message}` : String(failure)}`;
      return;
    }
    if (!this.shown) return;
    section.hidden = false;
    byId("no-mail").hidden = messages.length > 0;
    byId("mailbox").replaceChildren(
      ...messages.map((message) => {
        const item = document.createElement("li");
        item.className = "task mail";
        item.dataset["mailId"] = message.id;
        const head = Object.assign(document.createElement("p"), {
          className: "hint",
          textContent: `${new Date(message.sent_at).toLocaleString()} · ${message.from} → ${message.to.join(", ")}`,
        });
        const subject = Object.assign(document.createElement("p"), { className: "title mail-subject", textContent: message.subject });
        const text = Object.assign(document.createElement("pre"), { className: "mail-text", textContent: message.text });
        item.append(subject, head, text);
        return item;
      }),
    );
  }

  private announce(message: string): void {
    byId("schedules-announcer").textContent = message;
  }

  private refreshEmpty(): void {
    byId("no-schedules").hidden = this.rows.size > 0;
  }
}
