/** The seeds' polling advice: 1 s doubling to 30 s, giving up after about 5 minutes. */

export interface BackoffPolicy {
  /** The first wait. */
  initialMs: number;
  /** The longest wait. */
  maxMs: number;
  /** Polling stops once this much time has been spent waiting. */
  giveUpMs: number;
}

export const SEED_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({
  initialMs: 1_000,
  maxMs: 30_000,
  giveUpMs: 300_000,
});

/** The waits of one polling run, in order: null once the run should give up. */
export class Backoff {
  private nextMs: number;
  private waitedMs = 0;

  constructor(private readonly policy: BackoffPolicy = SEED_BACKOFF) {
    this.nextMs = policy.initialMs;
  }

  /** Total time waited so far. */
  get waited(): number {
    return this.waitedMs;
  }

  /** The next wait, or null when waiting it would pass the give-up time. */
  next(): number | null {
    if (this.waitedMs >= this.policy.giveUpMs) return null;
    const wait = Math.min(this.nextMs, this.policy.giveUpMs - this.waitedMs);
    this.waitedMs += wait;
    this.nextMs = Math.min(this.nextMs * 2, this.policy.maxMs);
    return wait;
  }

  /** Start again from the first wait (the task made progress, or the socket came back). */
  reset(): void {
    this.nextMs = this.policy.initialMs;
    this.waitedMs = 0;
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
