/** Choosing where a COMPLETED file is delivered, on the export form and the schedule form: a
 * checkbox per ACTIVE destination of the tenant, and the path template under each. */

import { ApiError, describeTarget, type DestinationView, type ExportsClient } from "@exports/client";

/** Fill ``fieldset`` with the tenant's destinations (ids of its controls start with ``prefix``);
 * hidden where the API refuses the list (a deployment without destinations, a caller who may
 * use none). */
export async function loadDestinationPicker(fieldset: HTMLFieldSetElement, client: ExportsClient, prefix: string): Promise<void> {
  const usable: DestinationView[] = [];
  try {
    for await (const destination of client.destinations()) if (destination.state === "ACTIVE") usable.push(destination);
  } catch (failure) {
    if (!(failure instanceof ApiError)) throw failure;
    fieldset.hidden = true;
    return;
  }
  // Filled at once after the list came, so that two loads in flight never add twice.
  const legend = Object.assign(document.createElement("legend"), { textContent: "Deliver to" });
  fieldset.replaceChildren(legend);
  fieldset.hidden = false;
  if (usable.length === 0) {
    fieldset.append(Object.assign(document.createElement("p"), { className: "hint", textContent: "No destinations yet: add one under Destinations." }));
    return;
  }
  for (const destination of usable) {
    const label = Object.assign(document.createElement("label"), { className: "check" });
    const box = Object.assign(document.createElement("input"), { type: "checkbox", name: "destinations", value: destination.destination_id });
    label.append(box, `${destination.name} (${describeTarget(destination)})`);
    fieldset.append(label);
  }
  const templateId = `${prefix}-path-template`;
  const hintId = `${templateId}-hint`;
  const templateLabel = Object.assign(document.createElement("label"), { htmlFor: templateId, textContent: "Path template" });
  const template = Object.assign(document.createElement("input"), {
    id: templateId,
    name: "path_template",
    type: "text",
    autocomplete: "off",
    placeholder: "{file}",
  });
  template.setAttribute("aria-describedby", hintId);
  const hint = Object.assign(document.createElement("p"), {
    id: hintId,
    className: "hint",
    textContent: "Where the file goes under each destination: {type}, {date}, {task_id}, {file}; e.g. {type}/{date}/{file}.",
  });
  fieldset.append(templateLabel, template, hint);
}

/** The request's `destinations` and `path_template`, or nothing when none is chosen. */
export function readDestinationChoice(fieldset: HTMLFieldSetElement): { destinations?: string[]; path_template?: string } {
  const chosen = [...fieldset.querySelectorAll<HTMLInputElement>('input[name="destinations"]:checked')].map((box) => box.value);
  if (chosen.length === 0) return {};
  const template = fieldset.querySelector<HTMLInputElement>('input[name="path_template"]')?.value.trim() ?? "";
  return { destinations: chosen, ...(template ? { path_template: template } : {}) };
}
