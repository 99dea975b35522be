/** One schedule in the list: when it runs, its state, its next and last run, its failures, a
 * feed's watermark, and what can be done with it (pause or resume, run now, its runs, its latest
 * file, its secret permalink, delete). */

import { describeTiming, type ScheduleRun, type ScheduleView } from "@exports/client";

import { shortId } from "./task-row.js";

export type ScheduleAction =
  | "pause"
  | "resume"
  | "run"
  | "runs"
  | "latest"
  | "permalink"
  | "revoke-permalink"
  | "delete"
  | "confirm-delete"
  | "edit-destinations"
  | "save-destinations";

/** What the row's buttons ask for. */
export type OnScheduleAction = (action: ScheduleAction, schedule: ScheduleView) => void;

/** A local ISO date-time with its offset (`2026-12-07T08:00:00+01:00`) as people read it. */
export function wallTime(local: string): string {
  return local.slice(0, 16).replace("T", " ");
}

/** An instant (`2026-12-07T07:00:00Z`) as wall time in ``zone``: `2026-12-07 08:00`. */
export function inZone(instant: string, zone: string): string {
  const options = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" } as const;
  try {
    // Sweden's format is ISO's order: "2026-12-07 08:00".
    return new Intl.DateTimeFormat("sv-SE", { ...options, timeZone: zone }).format(new Date(instant));
  } catch {
    return `${new Intl.DateTimeFormat("sv-SE", { ...options, timeZone: "UTC" }).format(new Date(instant))} UTC`;
  }
}

const LABELS: Record<ScheduleAction, string> = {
  pause: "Pause",
  resume: "Resume",
  run: "Run now",
  runs: "Show runs of",
  latest: "Download the latest file of",
  permalink: "New permalink of",
  "revoke-permalink": "Revoke the permalink of",
  delete: "Delete",
  "confirm-delete": "Confirm delete",
  "edit-destinations": "Change the destinations of",
  "save-destinations": "Save the destinations of",
};

/** The schedule's name, or what it exports. */
export function scheduleTitle(schedule: ScheduleView): string {
  return schedule.name ?? `${schedule.export_type} · ${schedule.format}`;
}

function lastRun(schedule: ScheduleView): string {
  const run = schedule.last_run;
  if (!run) return "none yet";
  return `${run.status.toLowerCase()}, for ${inZone(run.scheduled_for, schedule.timezone)}`;
}

const views = new WeakMap<HTMLElement, ScheduleView>();

/** A new row's element for ``schedule``. */
export function createScheduleRow(schedule: ScheduleView, onAction: OnScheduleAction): HTMLLIElement {
  const row = document.createElement("li");
  row.className = "task schedule";
  row.dataset["scheduleId"] = schedule.schedule_id;
  const titleId = `schedule-${schedule.schedule_id}-title`;
  row.setAttribute("aria-labelledby", titleId);
  row.innerHTML = `
    <div class="task-head">
      <span class="title"></span>
      <span class="state"></span>
    </div>
    <dl class="facts">
      <div><dt>Runs</dt><dd class="timing"></dd></div>
      <div><dt>Next run</dt><dd class="next-run"></dd></div>
      <div><dt>Last run</dt><dd class="last-run"></dd></div>
      <div><dt>Failures in a row</dt><dd class="failures"></dd></div>
      <div class="feed-fact"><dt>Changes sent up to</dt><dd class="watermark"></dd></div>
      <div class="empty-fact"><dt>Empty runs</dt><dd>skipped</dd></div>
      <div class="wide"><dt>Delivered to</dt><dd class="delivered-to"></dd></div>
    </dl>
    <fieldset class="row-destinations" hidden></fieldset>
    <p class="hint paused-reason"></p>
    <p class="permalink" hidden>Permalink (shown once; anyone with it gets the latest file): <code class="permalink-url"></code></p>
    <p class="error schedule-error"></p>
    <div class="actions">
      <button type="button" class="secondary" data-action="pause">Pause</button>
      <button type="button" class="secondary" data-action="resume">Resume</button>
      <button type="button" class="secondary" data-action="run">Run now</button>
      <button type="button" class="secondary" data-action="runs" aria-expanded="false">Show runs</button>
      <button type="button" class="secondary" data-action="latest">Latest file</button>
      <button type="button" class="secondary" data-action="permalink">New permalink</button>
      <button type="button" class="secondary" data-action="revoke-permalink">Revoke permalink</button>
      <button type="button" class="secondary" data-action="edit-destinations" aria-expanded="false">Destinations</button>
      <button type="button" data-action="save-destinations" hidden>Save destinations</button>
      <button type="button" class="secondary" data-action="delete">Delete</button>
      <button type="button" data-action="confirm-delete" hidden>Confirm delete</button>
    </div>
    <ul class="runs" hidden></ul>`;
  // Set as attributes, never into the markup: the ids come from the server.
  row.querySelector(".title")!.id = titleId;
  for (const button of row.querySelectorAll<HTMLButtonElement>("button[data-action]")) {
    button.addEventListener("click", () => onAction(button.dataset["action"] as ScheduleAction, views.get(row)!));
  }
  updateScheduleRow(row, schedule);
  return row;
}

/** Show ``schedule``'s state in ``row``. */
export function updateScheduleRow(row: HTMLLIElement, schedule: ScheduleView): void {
  views.set(row, schedule);
  const text = (selector: string, value: string): void => {
    row.querySelector(selector)!.textContent = value;
  };
  const title = scheduleTitle(schedule);
  text(".title", schedule.name ? `${title} · ${schedule.export_type} · ${schedule.format}` : title);
  const state = row.querySelector<HTMLElement>(".state")!;
  state.textContent = schedule.state.toLowerCase();
  state.dataset["state"] = schedule.state;
  text(".timing", `${describeTiming(schedule)} (${schedule.timezone})`);
  const next = schedule.next_runs[0];
  text(".next-run", next ? `${wallTime(next.local)} ${schedule.timezone}` : "none");
  text(".last-run", lastRun(schedule));
  text(".failures", String(schedule.consecutive_failures));
  const reason = schedule.paused_reason;
  text(".paused-reason", reason ? `Paused: ${reason.code}: ${reason.message}` : "");
  const paused = schedule.state === "PAUSED";
  const button = (action: ScheduleAction): HTMLButtonElement =>
    row.querySelector<HTMLButtonElement>(`[data-action="${action}"]`)!;
  button("pause").hidden = paused;
  button("resume").hidden = !paused;
  const feed = Object.values(schedule.filters).includes("since_last_run");
  row.querySelector<HTMLElement>(".feed-fact")!.hidden = !feed;
  text(".watermark", schedule.watermark ? inZone(schedule.watermark, schedule.timezone) : "none yet (from its start)");
  row.querySelector<HTMLElement>(".empty-fact")!.hidden = schedule.when_empty !== "skip";
  const destinations = schedule.destinations ?? [];
  text(".delivered-to", destinations.length ? `${destinations.join(", ")} (${schedule.path_template ?? "{file}"})` : "nowhere (a link only)");
  button("latest").hidden = schedule.latest_task_id === null;
  button("revoke-permalink").hidden = !schedule.permalink;
  for (const [action, label] of Object.entries(LABELS)) button(action as ScheduleAction).setAttribute("aria-label", `${label} ${title}`);
}

/** Show a new permalink's URL in the row (it is shown once), or take it away (``null``). */
export function showPermalink(row: HTMLLIElement, url: string | null): void {
  const shown = row.querySelector<HTMLElement>(".permalink")!;
  shown.querySelector(".permalink-url")!.textContent = url ?? "";
  shown.hidden = url === null;
}

/** List ``runs`` (newest first) in the row, each linking to its task in the exports view. */
export function showRuns(row: HTMLLIElement, runs: readonly ScheduleRun[], zone: string): void {
  const list = row.querySelector<HTMLUListElement>(".runs")!;
  list.replaceChildren(
    ...(runs.length === 0
      ? [Object.assign(document.createElement("li"), { className: "hint", textContent: "No runs yet." })]
      : runs.map((run) => {
          const item = document.createElement("li");
          item.dataset["taskId"] = run.task_id;
          const link = document.createElement("a");
          link.href = `#exports/${encodeURIComponent(run.task_id)}`;
          link.textContent = `Export ${shortId(run.task_id)}`;
          const when = run.scheduled_for ? `for ${inZone(run.scheduled_for, zone)}` : "run now";
          item.append(link, `: ${run.status.toLowerCase()}, ${when}, ${run.rows_written.toLocaleString()} rows`);
          return item;
        })),
  );
  list.hidden = false;
  row.querySelector('[data-action="runs"]')!.setAttribute("aria-expanded", "true");
}

/** Tick the schedule's own destinations and fill its template in ``fieldset`` (a picker just
 * loaded: loadDestinationPicker), then show it with its Save button. */
export function showDestinationChoice(row: HTMLLIElement, fieldset: HTMLFieldSetElement, schedule: ScheduleView): void {
  const chosen = new Set(schedule.destinations ?? []);
  for (const box of fieldset.querySelectorAll<HTMLInputElement>('input[name="destinations"]')) box.checked = chosen.has(box.value);
  const template = fieldset.querySelector<HTMLInputElement>('input[name="path_template"]');
  if (template) template.value = schedule.path_template ?? "";
  fieldset.hidden = false;
  row.querySelector<HTMLButtonElement>('[data-action="save-destinations"]')!.hidden = fieldset.querySelector("input") === null;
  row.querySelector('[data-action="edit-destinations"]')!.setAttribute("aria-expanded", "true");
}

/** Hide the row's choice of destinations again (after a save). */
export function hideDestinationChoice(row: HTMLLIElement): void {
  row.querySelector<HTMLFieldSetElement>(".row-destinations")!.hidden = true;
  row.querySelector<HTMLButtonElement>('[data-action="save-destinations"]')!.hidden = true;
  row.querySelector('[data-action="edit-destinations"]')!.setAttribute("aria-expanded", "false");
}
