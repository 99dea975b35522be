/** The next firings of a cron expression in a time zone, for the schedule form's preview (no DOM:
 * node tests it). Five fields, as the service takes them: minute hour day-of-month month
 * day-of-week, with `*`, lists, ranges, steps and the English names of months and days; when
 * both day fields are restricted a day matching either fires (as cron does). A wall time that
 * repeats when clocks go back fires once, at its first occurrence; one that a DST change skips is
 * shown just after the gap. The service's own evaluation (a schedule's next_runs) is what counts. */

const FIELDS = [
  { min: 0, max: 59, names: [] as string[] },
  { min: 0, max: 23, names: [] as string[] },
  { min: 1, max: 31, names: [] as string[] },
  { min: 1, max: 12, names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] },
  { min: 0, max: 7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] },
] as const;
// Days searched for the next firings (a 29 February expression fires within four years).
const SEARCH_DAYS = 366 * 4 + 1;

interface Cron {
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  readonly anyDay: boolean;
  readonly anyWeekday: boolean;
}

function value(text: string, field: (typeof FIELDS)[number]): number {
  const named = (field.names as readonly string[]).indexOf(text.toUpperCase());
  const number = named >= 0 ? named + field.min : /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(number >= field.min && number <= field.max)) throw new RangeError(`${text} is out of range`);
  return number;
}

function values(text: string, field: (typeof FIELDS)[number]): number[] {
  const found = new Set<number>();
  for (const part of text.split(",")) {
    const [range = "", stepText] = part.split("/");
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new RangeError(`${part}: bad step`);
    let low: number = field.min;
    let high: number = field.max;
    if (range !== "*") {
      const [first = "", last] = range.split("-");
      low = value(first, field);
      high = last === undefined ? (stepText === undefined ? low : field.max) : value(last, field);
    }
    if (low > high) throw new RangeError(`${part}: empty range`);
    for (let n = low; n <= high; n += step) found.add(n);
  }
  return [...found].sort((a, b) => a - b);
}

function parse(expression: string): Cron {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) throw new RangeError("five fields");
  const [minute, hour, day, month, weekday] = parts.map((part, index) => values(part, FIELDS[index]!));
  return {
    minutes: minute!,
    hours: hour!,
    days: new Set(day),
    months: new Set(month),
    weekdays: new Set(weekday!.map((n) => n % 7)),
    anyDay: parts[2]!.startsWith("*"),
    anyWeekday: parts[4]!.startsWith("*"),
  };
}

/** Minutes east of UTC of ``zone`` at ``instant`` (ms). */
function offsetMinutes(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
  }).formatToParts(new Date(instant));
  const part = (type: string): number => Number(parts.find((p) => p.type === type)!.value);
  const wall = Date.UTC(part("year"), part("month") - 1, part("day"), part("hour"), part("minute"));
  return Math.round((wall - Math.floor(instant / 60_000) * 60_000) / 60_000);
}

/** The instant of the wall time (as a UTC timestamp of its fields) in ``zone``: its first
 * occurrence, or the end of the gap when a DST change skips it. */
function instantOf(wall: number, zone: string): number {
  const before = offsetMinutes(wall - 86_400_000, zone);
  const after = offsetMinutes(wall + 86_400_000, zone);
  const early = wall - Math.max(before, after) * 60_000;
  if (offsetMinutes(early, zone) === Math.max(before, after)) return early;
  const late = wall - Math.min(before, after) * 60_000;
  if (offsetMinutes(late, zone) === Math.min(before, after)) return late;
  // In a gap: the first instant after it.
  return wall - before * 60_000;
}

/** The next ``count`` firings of ``expression`` in ``zone`` after ``now`` (ms), as Dates; null
 * when the expression is no five-field cron or the zone is unknown. */
export function cronFirings(expression: string, zone: string, now: number, count: number): Date[] | null {
  let cron: Cron;
  try {
    cron = parse(expression);
    offsetMinutes(now, zone);
  } catch {
    return null;
  }
  const found: number[] = [];
  const today = now + offsetMinutes(now, zone) * 60_000;
  const start = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth(), new Date(today).getUTCDate());
  for (let index = 0; index < SEARCH_DAYS && found.length < count; index += 1) {
    const day = new Date(start + index * 86_400_000);
    if (!cron.months.has(day.getUTCMonth() + 1)) continue;
    const dayMatch = cron.days.has(day.getUTCDate());
    const weekdayMatch = cron.weekdays.has(day.getUTCDay());
    const fires = cron.anyDay || cron.anyWeekday ? dayMatch && weekdayMatch : dayMatch || weekdayMatch;
    if (!fires) continue;
    for (const hour of cron.hours) {
      for (const minute of cron.minutes) {
        const instant = instantOf(day.getTime() + (hour * 60 + minute) * 60_000, zone);
        if (instant > now && !found.includes(instant)) found.push(instant);
        if (found.length === count) break;
      }
      if (found.length === count) break;
    }
  }
  return found.sort((a, b) => a - b).map((instant) => new Date(instant));
}

/** ``Next: Mon, 7 Dec 2026, 08:00 · Mon, 14 Dec 2026, 08:00 · … (Europe/Berlin)``, or what is wrong. */
export function cronPreview(expression: string, zone: string, now: number, count = 3): string {
  const firings = cronFirings(expression, zone, now, count);
  if (firings === null) return "Not a five-field cron expression in a known zone yet.";
  if (firings.length === 0) return "It never fires.";
  const format = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  return `Next: ${firings.map((firing) => format.format(firing)).join(" · ")} (${zone})`;
}
