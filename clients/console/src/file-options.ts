/** The "Language and CSV" fields of the export form and the schedule form, read as the request's
 * `locale` and `csv_dialect`. A field left at its default is not sent: the type's default language,
 * RFC 4180 in UTF-8 (the service's defaults), so a request from the console reads like one by hand. */

export interface FileOptions {
  locale?: string;
  csv_dialect?: { delimiter?: string; decimal_separator?: string; encoding?: string };
}

type Option = readonly [value: string, text: string];

interface Choice {
  /** The request's field (`locale`, or one of `csv_dialect`'s). */
  name: string;
  /** The select's id, after the form's prefix. */
  id: string;
  label: string;
  /** Value and text of each option; the first is the service's default. */
  options: readonly [Option, ...Option[]];
}

/** The fields, once for both forms. */
const CHOICES: readonly Choice[] = [
  {
    name: "locale",
    id: "locale",
    label: "Language of the headers",
    options: [
      ["", "the type's default"],
      ["en", "English (en)"],
      ["de", "Deutsch (de)"],
      ["zh-CN", "中文 (zh-CN)"],
      ["ja", "日本語 (ja)"],
    ],
  },
  {
    name: "delimiter",
    id: "csv-delimiter",
    label: "CSV delimiter",
    options: [
      [",", "comma ,"],
      [";", "semicolon ; (German Excel)"],
      ["\t", "tab"],
      ["|", "bar |"],
    ],
  },
  {
    name: "decimal_separator",
    id: "csv-decimal",
    label: "CSV decimal separator",
    options: [
      [".", "point 1.5"],
      [",", "comma 1,5 (with ; as delimiter)"],
    ],
  },
  {
    name: "encoding",
    id: "csv-encoding",
    label: "CSV encoding",
    options: [
      ["utf-8", "UTF-8"],
      ["gb18030", "GB18030 (Chinese Excel)"],
      ["shift_jis", "Shift_JIS (Japanese Excel)"],
      ["windows-1252", "Windows-1252"],
    ],
  },
];

const DIALECT_DEFAULTS: Record<string, string> = Object.fromEntries(
  CHOICES.filter((choice) => choice.name !== "locale").map((choice) => [choice.name, choice.options[0][0]]),
);

/** Put the fields into a form's (empty) fieldset, their ids after ``idPrefix`` (two forms hold them). */
export function fillFileOptions(fieldset: HTMLFieldSetElement, idPrefix: string): void {
  for (const choice of CHOICES) {
    const id = idPrefix + choice.id;
    const select = Object.assign(document.createElement("select"), { id, name: choice.name });
    select.append(
      ...choice.options.map(([value, text]) => Object.assign(document.createElement("option"), { value, textContent: text })),
    );
    fieldset.append(Object.assign(document.createElement("label"), { htmlFor: id, textContent: choice.label }), select);
  }
}

/** The fieldset's choices (its selects are named after the request's fields). */
export function readFileOptions(fieldset: HTMLFieldSetElement): FileOptions {
  const options: FileOptions = {};
  const dialect: Record<string, string> = {};
  for (const select of Array.from(fieldset.querySelectorAll("select"))) {
    if (select.name === "locale") {
      if (select.value) options.locale = select.value;
    } else if (select.value !== DIALECT_DEFAULTS[select.name]) {
      dialect[select.name] = select.value;
    }
  }
  if (Object.keys(dialect).length > 0) options.csv_dialect = dialect;
  return options;
}
