/** The time an export has left, from the pace its progress moves at (the percentage is rows read
 * against the rows the worker expects). */

import type { TaskView } from "@exports/client";

interface Seen {
  readonly at: number;
  readonly progress: number;
}

/** Seconds left for one task, from the states seen of it. The pace is measured from the last
 * state seen before its progress first moved: time a source spends before its first row (a sort,
 * a count, a slow query) is time not started, not a slow pace. Counting from ``started_at``
 * instead put a 3,000,000-row CSV at "about 2 min" with 9 s left, after 26 s at 0 %. */
export class Pace {
  private origin: Seen | null = null;
  private moved = false;

  /** Seconds left after seeing ``task`` at ``now`` (ms); null while there is no pace yet, and
   * once the task is not running. */
  secondsLeft(task: TaskView, now: number): number | null {
    const origin = this.origin;
    if (task.status !== "RUNNING" || task.progress >= 100) {
      // A retried task runs again from 0: its pace starts over.
      this.origin = null;
      this.moved = false;
      return null;
    }
    if (origin === null || task.progress < origin.progress || (!this.moved && task.progress === origin.progress)) {
      this.origin = { at: now, progress: task.progress };
      this.moved = false;
      return null;
    }
    const seconds = (now - origin.at) / 1000;
    if (task.progress === origin.progress || seconds <= 0) return null;
    this.moved = true;
    const perSecond = (task.progress - origin.progress) / seconds;
    return Math.max(0, Math.round((100 - task.progress) / perSecond));
  }
}
