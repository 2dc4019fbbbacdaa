import type { RuntimeSizing } from "../../../contracts/index.ts";

/** The local queue's counters at one instant (the queue itself is volatile: never recovery truth). */
export interface QueueFacts {
  readonly queued: number;
  readonly running: number;
  readonly paused: boolean;
  readonly draining: boolean;
}

export type Admission =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly code: "local-queue-full" | "runtime-draining"; readonly detail: string };

/** Run slots a new run could start in right now (none while paused or draining). */
export function freeRunSlots(f: QueueFacts, sizing: RuntimeSizing): number {
  return f.paused || f.draining ? 0 : Math.max(0, sizing.maxConcurrentRuns - f.running);
}

/**
 * How many more runs this runtime accepts now: the free local-queue places plus the run slots a run
 * would start in at once. The queue proper (runs waiting for a slot) never holds more than
 * `localQueueCapacity`.
 */
export function availableSlots(f: QueueFacts, sizing: RuntimeSizing): number {
  return Math.max(0, sizing.localQueueCapacity + freeRunSlots(f, sizing) - f.queued);
}

/**
 * Whether a new run may enter the local queue. A draining runtime takes nothing new; otherwise the
 * run is accepted while `availableSlots` > 0, and refused with `local-queue-full` and the counts
 * that made it full (so the caller can tell a paused queue from a busy one).
 */
export function admitRun(f: QueueFacts, sizing: RuntimeSizing): Admission {
  if (f.draining)
    return { accepted: false, code: "runtime-draining", detail: "the runtime is draining and takes no new runs" };
  if (availableSlots(f, sizing) > 0) return { accepted: true };
  return {
    accepted: false,
    code: "local-queue-full",
    detail: `local queue full: queued=${f.queued}/${sizing.localQueueCapacity}, running=${f.running}/${sizing.maxConcurrentRuns}, paused=${f.paused}`,
  };
}

/** How many queued runs to start now: none while paused; a draining runtime still starts what it already accepted. */
export function runsToStart(f: QueueFacts, sizing: RuntimeSizing): number {
  // Draining still finishes runs already accepted: a queued run is work this runtime promised.
  const slots = f.paused ? 0 : Math.max(0, sizing.maxConcurrentRuns - f.running);
  return Math.min(f.queued, slots);
}

/**
 * Whether new runs must leave the free run slots to the resumes still being checked (ResumeExecution
 * accepted for its check, its journal still being read): each such resume holds one free slot, so a
 * new run starts only in a slot beyond them. A DispatchRun's check is one read and a resume's is the
 * journal's, so a new run placed beside a resume on a fresh replacement used to be accepted first and
 * take its only slot: the resume then waited for that whole run (issue 15: 8-10 s after `admitted`).
 */
export function newRunsHeld(f: QueueFacts, sizing: RuntimeSizing, resumesChecking: number): boolean {
  return resumesChecking > 0 && Math.max(0, sizing.maxConcurrentRuns - f.running) <= resumesChecking;
}

/** What the runtime knows of a queued run when it picks the next one to start. */
export interface QueuedRun {
  readonly resume: boolean;
  readonly tenantId: string;
}

/**
 * Which queued run starts next (its index; -1 for none). Resumes first, in queue order (recovery
 * items go ahead of new work). Among new runs, the oldest one of the tenant with the fewest runs
 * going here (`going`: started and not ended): on a shared runtime a flood's runs fill the local
 * queue, and first-in first-out made a quiet tenant's run wait behind all of them although admission
 * had placed it at once (docs/security.md "Floods"). With one tenant this is first-in first-out.
 * With `resumesOnly` (`newRunsHeld`), only a resume may start.
 */
export function nextToStart(
  queue: readonly QueuedRun[],
  going: (tenantId: string) => number,
  resumesOnly = false,
): number {
  let best = -1;
  let fewest = Infinity;
  for (let i = 0; i < queue.length; i++) {
    const r = queue[i]!;
    if (r.resume) return i;
    if (resumesOnly) continue;
    const n = going(r.tenantId);
    if (n < fewest) {
      best = i;
      fewest = n;
    }
  }
  return best;
}
