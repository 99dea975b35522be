/** The time an export has left, from the pace its progress moves at (the percentage is rows read
 * against the rows the worker expects). The console's ETA; exportctl's is the same rule in
 * client/src/exports_client/eta.py, with the same cases in its tests.
 *
 * The time left is the rows still to read at the pace seen, plus the file's finishing: after its
 * last row the worker uploads the last part and completes the multipart upload, which takes time
 * in proportion to the file while the percentage stands at 99 (0.75 s for a 3,000,000-row CSV of
 * 276 MB in eta.py's recording, ~2 s in the run). Without it the ETA read short at the end. */

import type { TaskView } from "@exports/client";

/** Seconds of finishing per row of the export (FINISH_SEC_PER_ROW in eta.py, measured there). */
export const FINISH_SEC_PER_ROW = 2.5e-7;

interface Seen {
  readonly at: number;
  readonly progress: number;
}

/** Seconds left for one task, from the states seen of it, paced from the first state with a row
 * read: time a source spends before its first row (a sort, a count, a slow query) is time not
 * started, not a slow pace (counted in, a 3,000,000-row CSV that sat at 0 % for 26 s showed
 * "about 2 min" with 9 s left); nor is the last state seen at 0 % a start, since pushed states
 * come only when something changed. The pace runs to the moment the percentage last changed, and
 * the time since counts down: a percentage is written every few seconds, so a state polled again
 * is older than it looks. */
export class Pace {
  private origin: Seen | null = null;
  private changed: Seen | null = null;

  constructor(private readonly finishSecPerRow: number = FINISH_SEC_PER_ROW) {}

  /** Seconds left after seeing ``task`` at ``now`` (ms); null while there is no pace yet, and
   * once the task is not running. */
  secondsLeft(task: TaskView, now: number): number | null {
    const origin = this.origin;
    const started = task.progress > 0 || task.rows_written > 0;
    if (task.status !== "RUNNING" || task.progress >= 100 || !started) {
      // Not reading rows (yet, or any more: a retried task runs again from 0).
      this.origin = this.changed = null;
      return null;
    }
    if (origin === null || task.progress < origin.progress) {
      this.origin = this.changed = { at: now, progress: task.progress };
      return null;
    }
    if (this.changed === null || task.progress !== this.changed.progress) {
      this.changed = { at: now, progress: task.progress };
    }
    const changed = this.changed;
    if (changed.progress === origin.progress || changed.at <= origin.at) return null;
    const perSecond = (changed.progress - origin.progress) / ((changed.at - origin.at) / 1000);
    const reading = (100 - task.progress) / perSecond;
    const finishing = task.progress > 0 ? (this.finishSecPerRow * task.rows_written * 100) / task.progress : 0;
    return Math.max(0, Math.round(reading + finishing - (now - changed.at) / 1000));
  }
}
