/** One task in the list: status, a progress bar, rows, ETA, its filters, size and expiry, and
 * what can be done with it. */

import { isTerminal, type TaskView } from "@exports/client";

import { deliveryText, etaText, filtersText, sizeText } from "./facts.js";
import { Pace } from "./pace.js";

export type Action = "cancel" | "retry" | "retry-delivery";

/** What the row's buttons ask for (``destinationId``: which delivery, for "retry-delivery"). */
export type OnAction = (action: Action, task: TaskView, destinationId?: string) => void;

/** A task's id short enough to read: its last characters (ids start with a timestamp, which
 * tasks submitted together share). */
export function shortId(taskId: string): string {
  return taskId.slice(-6);
}

const RETRYABLE = new Set(["FAILED", "TIMEOUT", "CANCELLED"]);

function eta(task: TaskView, pace: Pace): string {
  return etaText(task.status, pace.secondsLeft(task, Date.now()));
}

function rows(task: TaskView): string {
  const total = typeof task.rows === "number" ? task.rows : null;
  return total === null ? task.rows_written.toLocaleString() : `${task.rows_written.toLocaleString()} of ${total.toLocaleString()}`;
}

/** A new row's element for ``task`` (fill it with :func:`updateRow`). */
export function createRow(task: TaskView, onAction: OnAction): HTMLLIElement {
  const row = document.createElement("li");
  row.className = "task";
  row.dataset["taskId"] = task.task_id;
  const titleId = `task-${task.task_id}-title`;
  row.setAttribute("aria-labelledby", titleId);
  row.innerHTML = `
    <div class="task-head">
      <span class="title"></span>
      <span class="status"></span>
    </div>
    <div class="progress">
      <progress max="100" value="0"></progress>
      <span class="percent" aria-hidden="true"></span>
    </div>
    <dl class="facts">
      <div><dt>Rows</dt><dd class="rows"></dd></div>
      <div><dt>ETA</dt><dd class="eta"></dd></div>
      <div><dt>Created</dt><dd class="created"></dd></div>
      <div><dt>Size</dt><dd class="size"></dd></div>
      <div><dt>Expires</dt><dd class="expires"></dd></div>
      <div class="wide"><dt>Filters</dt><dd class="filters"></dd></div>
      <div class="wide" hidden><dt>Deliveries</dt><dd><ul class="deliveries"></ul></dd></div>
    </dl>
    <p class="error task-error"></p>
    <div class="actions">
      <button type="button" class="secondary" data-action="cancel">Cancel</button>
      <button type="button" class="secondary" data-action="retry">Retry</button>
      <a class="button download" download>Download</a>
    </div>`;
  // Set as attributes, never into the markup: the ids come from the server.
  row.querySelector(".title")!.id = titleId;
  row.querySelector("progress")!.setAttribute("aria-labelledby", titleId);
  for (const button of row.querySelectorAll<HTMLButtonElement>("button[data-action]")) {
    button.addEventListener("click", () => onAction(button.dataset["action"] as Action, current(row)));
  }
  // A failed delivery's Retry button is made with its line (showDeliveries): one listener here.
  row.querySelector(".deliveries")!.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action="retry-delivery"]');
    if (button) onAction("retry-delivery", current(row), button.dataset["destinationId"]);
  });
  updateRow(row, task);
  return row;
}

const views = new WeakMap<HTMLElement, TaskView>();
// Each row's pace, from the states it has shown.
const paces = new WeakMap<HTMLElement, Pace>();

function current(row: HTMLElement): TaskView {
  return views.get(row)!;
}

/** Show ``task``'s state in ``row``. */
export function updateRow(row: HTMLLIElement, task: TaskView): void {
  views.set(row, task);
  let pace = paces.get(row);
  if (!pace) paces.set(row, (pace = new Pace()));
  const text = (selector: string, value: string): void => {
    row.querySelector(selector)!.textContent = value;
  };
  const short = shortId(task.task_id);
  text(".title", `${task.export_type} · ${task.format} · ${short}`);
  const status = row.querySelector<HTMLElement>(".status")!;
  status.textContent = task.status.toLowerCase();
  status.dataset["status"] = task.status;
  const bar = row.querySelector("progress")!;
  bar.value = task.progress;
  bar.setAttribute("aria-valuetext", `${task.progress} %, ${task.status.toLowerCase()}`);
  text(".percent", `${task.progress} %`);
  text(".rows", rows(task));
  text(".eta", eta(task, pace));
  text(".created", new Date(task.created_at).toLocaleString());
  text(".size", sizeText(task.size_bytes));
  // The task and its file are deleted then (the download link too).
  text(".expires", new Date(task.expires_at).toLocaleString());
  text(".filters", filtersText(task.filters));
  showDeliveries(row, task);
  text(".task-error", task.error ? `${task.error.code}: ${task.error.message}` : "");
  const label = `${task.export_type} export ${short}`;
  const cancel = row.querySelector<HTMLButtonElement>('[data-action="cancel"]')!;
  cancel.hidden = isTerminal(task.status);
  cancel.setAttribute("aria-label", `Cancel ${label}`);
  const retry = row.querySelector<HTMLButtonElement>('[data-action="retry"]')!;
  retry.hidden = !RETRYABLE.has(task.status);
  retry.setAttribute("aria-label", `Retry ${label}`);
  const download = row.querySelector<HTMLAnchorElement>(".download")!;
  download.hidden = !(task.status === "COMPLETED" && task.download_url);
  if (task.download_url) download.href = task.download_url;
  download.setAttribute("aria-label", `Download ${task.file_name ?? label}`);
}

/** Each delivery of the file, a line: where it went, or why not (the API's words); a FAILED one
 * of a file still kept has a Retry button (POST …/deliveries/{id}/retry). */
function showDeliveries(row: HTMLLIElement, task: TaskView): void {
  const deliveries = task.deliveries ?? [];
  const list = row.querySelector<HTMLUListElement>(".deliveries")!;
  list.parentElement!.parentElement!.hidden = deliveries.length === 0;
  list.replaceChildren(
    ...deliveries.map((delivery) => {
      const item = document.createElement("li");
      item.append(Object.assign(document.createElement("span"), { textContent: deliveryText(delivery) }));
      item.dataset["status"] = delivery.status ?? "PENDING";
      item.dataset["destinationId"] = delivery.destination_id;
      if (delivery.status === "FAILED" && task.status === "COMPLETED") {
        const retry = Object.assign(document.createElement("button"), { type: "button", textContent: "Retry delivery" });
        retry.className = "secondary";
        retry.dataset["action"] = "retry-delivery";
        retry.dataset["destinationId"] = delivery.destination_id;
        retry.setAttribute("aria-label", `Retry the delivery to ${delivery.destination_id}`);
        item.append(" ", retry);
      }
      return item;
    }),
  );
}
