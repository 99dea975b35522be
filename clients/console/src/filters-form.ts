/** The filters part of the form, generated from an export type's served JSON Schema, and the
 * filters object read back from it, each value typed by its schema. */

/** The parts of JSON Schema the served filter schemas use. */
export interface FilterSchema {
  type?: string;
  format?: string;
  enum?: readonly (string | number)[];
  items?: FilterSchema;
  title?: string;
  description?: string;
  minimum?: number;
  maximum?: number;
  "x-minimum"?: number;
  "x-maximum"?: number;
  default?: unknown;
  examples?: readonly unknown[];
  $ref?: string;
  anyOf?: readonly FilterSchema[];
  oneOf?: readonly FilterSchema[];
}

export interface ObjectSchema {
  properties?: Record<string, FilterSchema>;
  required?: readonly string[];
  $defs?: Record<string, FilterSchema>;
  definitions?: Record<string, FilterSchema>;
}

/** ``schema`` with its local references resolved and an optional value's ``anyOf: [X, null]``
 * (pydantic's shape for ``X | None``) read as X; the outer title and description win. */
export function resolved(schema: FilterSchema, root: ObjectSchema, depth = 0): FilterSchema {
  if (depth > 16) return schema; // a reference cycle: leave it to the server's validation
  let current = schema;
  if (current.$ref?.startsWith("#/")) {
    let target: unknown = root;
    for (const part of current.$ref.slice(2).split("/")) target = (target as Record<string, unknown> | undefined)?.[part];
    const { $ref: _, ...rest } = current;
    // A definition's title names a type (OrderStatus), not the field.
    const { title: _title, ...definition } = resolved((target as FilterSchema | undefined) ?? {}, root, depth + 1);
    current = { ...definition, ...rest };
  }
  const options = (current.anyOf ?? current.oneOf)?.filter((option) => option.type !== "null");
  if (options && options.length === 1) {
    const { anyOf: _a, oneOf: _o, ...rest } = current;
    current = { ...resolved(options[0]!, root, depth + 1), ...rest };
  }
  if (current.items) current = { ...current, items: resolved(current.items, root, depth + 1) };
  return current;
}

/** A readable label of a filter without a title: ``signed_up_from`` -> ``Signed up from``. */
function labelOf(name: string): string {
  const words = name.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const DAY_MS = 86_400_000;

/** A required date range starts filled in (the last seven days): a form that can be sent at once. */
function defaultDate(name: string): string {
  const daysAgo = name.endsWith("_from") ? 7 : 0;
  return new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Replace ``fieldset``'s fields (all but its legend) with one per filter of ``schema``; their
 * ids are ``<idPrefix>-<name>`` (a second form on the page takes a prefix of its own). */
export function renderFilters(fieldset: HTMLFieldSetElement, schema: ObjectSchema, idPrefix = "filter"): void {
  for (const child of [...fieldset.children]) if (child.tagName !== "LEGEND") child.remove();
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    fieldset.append(field(name, resolved(property, schema), required.has(name), idPrefix));
  }
}

/** The (from, to) date filters a type's range is made of, as exportctl's ``--from``/``--to``
 * find them: ``date_from``/``date_to``, or its one pair of date properties named
 * ``…from``/``…to`` (``…start``/``…end``, ``…after``/``…before``); null when none or several. */
export function dateRange(schema: ObjectSchema): [string, string] | null {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, property]) => [name, resolved(property, schema)]),
  );
  if ("date_from" in properties && "date_to" in properties) return ["date_from", "date_to"];
  const dated = new Set(
    Object.entries(properties)
      .filter(([, property]) => property.format === "date" || property.format === "date-time")
      .map(([name]) => name),
  );
  const pairs: [string, string][] = [];
  for (const [start, end] of [["from", "to"], ["start", "end"], ["after", "before"]] as const) {
    for (const name of dated) {
      const other = `${name.slice(0, -start.length)}${end}`;
      if (name.endsWith(start) && dated.has(other)) pairs.push([name, other]);
    }
  }
  return pairs.length === 1 ? pairs[0]! : null;
}

function field(name: string, schema: FilterSchema, required: boolean, idPrefix: string): HTMLElement {
  const id = `${idPrefix}-${name}`;
  const label = `${schema.title ?? labelOf(name)}${required ? " (required)" : ""}`;
  const hint = schema.description ? element("p", { class: "hint", id: `${id}-hint` }, schema.description) : null;
  const items = schema.items;
  if (schema.type === "array" && items?.enum) {
    // Several of a few values: a group of checkboxes (keyboard: Tab and Space).
    const group = element("fieldset", { "data-filter": name, "data-kind": "choices" });
    if (hint) group.setAttribute("aria-describedby", hint.id);
    group.append(element("legend", {}, label));
    for (const value of items.enum) {
      const choice = element("label", { class: "choice" });
      const box = element("input", { type: "checkbox", value: String(value), name });
      choice.append(box, String(value));
      group.append(choice);
    }
    if (hint) group.append(hint);
    return group;
  }
  const wrapper = element("div");
  let control: HTMLInputElement | HTMLSelectElement;
  if (schema.enum) {
    control = element("select");
    control.append(element("option", { value: "" }, required ? "choose one" : "any"));
    for (const value of schema.enum) control.append(element("option", { value: String(value) }, String(value)));
  } else if (schema.type === "boolean") {
    control = element("input", { type: "checkbox" });
  } else if (schema.type === "integer" || schema.type === "number") {
    control = element("input", { type: "number", step: schema.type === "integer" ? "1" : "any", inputmode: "numeric" });
    const minimum = schema.minimum ?? schema["x-minimum"];
    const maximum = schema.maximum ?? schema["x-maximum"];
    if (minimum !== undefined) control.setAttribute("min", String(minimum));
    if (maximum !== undefined) control.setAttribute("max", String(maximum));
  } else if (schema.format === "date") {
    control = element("input", { type: "date" });
    if (required) control.value = defaultDate(name);
  } else {
    control = element("input", { type: "text", autocomplete: "off" });
    if (schema.type === "array") control.setAttribute("placeholder", "comma-separated");
    else if (typeof schema.examples?.[0] === "string") control.setAttribute("placeholder", schema.examples[0]);
  }
  control.id = id;
  control.name = name;
  control.dataset["filter"] = name;
  control.dataset["kind"] = schema.type === "array" ? "list" : (schema.type ?? "string");
  if (required && schema.type !== "boolean") control.required = true;
  if (hint) control.setAttribute("aria-describedby", hint.id);
  wrapper.append(element("label", { for: id }, label), control);
  if (hint) wrapper.append(hint);
  return wrapper;
}

/** The filters the form holds, typed by their schemas; empty optional fields are left out. */
export function readFilters(fieldset: HTMLFieldSetElement): Record<string, unknown> {
  const filters: Record<string, unknown> = {};
  for (const control of fieldset.querySelectorAll<HTMLElement>("[data-filter]")) {
    const name = control.dataset["filter"]!;
    const kind = control.dataset["kind"];
    if (kind === "choices") {
      const chosen = [...control.querySelectorAll<HTMLInputElement>("input:checked")].map((box) => box.value);
      if (chosen.length > 0) filters[name] = chosen;
      continue;
    }
    const input = control as HTMLInputElement | HTMLSelectElement;
    if (input instanceof HTMLInputElement && input.type === "checkbox") {
      filters[name] = input.checked;
    } else if (input.value.trim() !== "") {
      const value = input.value.trim();
      if (kind === "integer") filters[name] = Number.parseInt(value, 10);
      else if (kind === "number") filters[name] = Number(value);
      else if (kind === "list") filters[name] = value.split(",").map((part) => part.trim()).filter(Boolean);
      else filters[name] = value;
    }
  }
  return filters;
}

/** Mark the field the API named invalid (``filters.date_from`` or ``date_from``), focus it;
 * false when the form has no such field. */
export function markInvalid(form: HTMLFormElement, field: string | null): boolean {
  for (const marked of form.querySelectorAll("[aria-invalid]")) marked.removeAttribute("aria-invalid");
  if (!field) return false;
  const name = field.replace(/^(body\.)?(filters\.)?/, "").split(".")[0];
  const control =
    form.querySelector<HTMLElement>(`[data-filter="${CSS.escape(name ?? "")}"]`) ??
    form.querySelector<HTMLElement>(`[name="${CSS.escape(name ?? "")}"]`);
  if (!control) return false;
  control.setAttribute("aria-invalid", "true");
  (control.querySelector<HTMLElement>("input") ?? control).focus();
  return true;
}
