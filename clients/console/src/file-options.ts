/** The "Language and CSV" fields of the export form and the schedule form, read as the request's
 * `locale` and `csv_dialect`. A field left at its default is not sent: the type's default language,
 * RFC 4180 in UTF-8 (the service's defaults), so a request from the console reads like one by hand. */

export interface FileOptions {
  locale?: string;
  csv_dialect?: { delimiter?: string; decimal_separator?: string; encoding?: string };
}

const DIALECT_DEFAULTS: Record<string, string> = { delimiter: ",", decimal_separator: ".", encoding: "utf-8" };

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
