/** The time an export has left, from the pace its progress moves at (the percentage is rows read
 * against the rows the worker expects). */

import type { TaskView } from "@exports/client";

interface Seen {
  readonly at: number;
  readonly progress: number;
}

/** Seconds left for one task, from the states seen of it, paced from the first state with a row
 * read: time a source spends before its first row (a sort, a count, a slow query) is time not
 * started, not a slow pace. Counting from ``started_at`` put a 3,000,000-row CSV at "about 2 min"
 * with 9 s left, after 26 s at 0 %; nor is the last state seen at 0 % a start, since pushed states
 * come only when something changed. */
export class Pace {
  private origin: Seen | null = null;

  /** Seconds left after seeing ``task`` at ``now`` (ms); null while there is no pace yet, and
   * once the task is not running. */
  secondsLeft(task: TaskView, now: number): number | null {
    const origin = this.origin;
    const started = task.progress > 0 || task.rows_written > 0;
    if (task.status !== "RUNNING" || task.progress >= 100 || !started) {
      // Not reading rows (yet, or any more: a retried task runs again from 0).
      this.origin = null;
      return null;
    }
    if (origin === null || task.progress < origin.progress) {
      this.origin = { at: now, progress: task.progress };
      return null;
    }
    const seconds = (now - origin.at) / 1000;
    if (task.progress === origin.progress || seconds <= 0) return null;
    const perSecond = (task.progress - origin.progress) / seconds;
    return Math.max(0, Math.round((100 - task.progress) / perSecond));
  }
}
