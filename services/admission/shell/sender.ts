import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";
import type { FairShare } from "../domain/fair-queue.ts";
import type { FlowKeys } from "./flow-gate.ts";
import type { CarriedBlocks } from "./pass-budget.ts";
import type { PassProbe } from "./pass-probe.ts";

/** A runtime command admission decided to send (DispatchRun, ResumeExecution, or a check then re-send). */
export type Send = () => Promise<unknown>;

/** What outlives one pass: runs being decided or sent, and the runtime commands still in flight. */
export interface AdmissionState {
  /** Runs a pass or an in-flight send is working on (never handled twice at once). */
  readonly busy: Set<string>;
  /** Tenant → its ResumeExecution commands sent and not yet answered: its other runs wait for them. */
  readonly resuming: Map<string, number>;
  /** Each tenant's virtual time for the fair order (placements of new work on shared runtimes). */
  readonly fair: FairShare;
  /** Flow key folds and locks (docs/flow-control.md). */
  readonly flow: FlowKeys;
  /** Runtime commands in flight (stop() waits for them). */
  readonly sends: Set<Promise<unknown>>;
  /** Called when a command was answered (or failed), so runs waiting on it are looked at at once. */
  readonly onSendDone: () => void;
  /** Each runtime's beat time at the last capacity read (candidates.ts: one Redis round trip while it holds). */
  readonly beatAts: Map<string, number>;
  /** Tenants the last pass found blocked, carried into the next (PassBudget.adopt). */
  blocks?: CarriedBlocks;
  /** The pass's per-tenant read of the last `worker.deployed` (deployed-version.ts); set by each pass. */
  deployed?: (tenantId: string) => Promise<string | undefined>;
  /** The pass in flight's (or the last one's) timings (pass-probe.ts). */
  probe?: PassProbe;
  /** When a pass last looked at the placements awaiting confirmation (placer.ts, PLACED_SCAN_MS). */
  placedScannedMs?: number;
  /**
   * True when the pass should take no further runs and end (what it started finishes): the index
   * changed after the pass began and it has run for its slice, so the next pass orders the newcomers.
   */
  readonly yieldWanted?: () => boolean;
}

/**
 * Runs a decided command outside the admission pass: the run stays busy until it is answered, a
 * resume holds its tenant's other runs until then (`resuming`), and `stop()` can wait for it.
 */
export function startSend(deps: AdmissionDeps, state: AdmissionState, r: IndexedRun, send: Send): void {
  const key = `${r.tenantId}/${r.sharedRunId}`;
  const resume = r.state.resume !== undefined;
  if (resume) state.resuming.set(r.tenantId, (state.resuming.get(r.tenantId) ?? 0) + 1);
  const p: Promise<unknown> = send()
    .catch((e) => deps.log.error({ run: r.sharedRunId, err: String(e) }, "runtime command failed; retried next pass"))
    .finally(() => {
      state.busy.delete(key);
      const left = (state.resuming.get(r.tenantId) ?? 1) - 1;
      if (resume && left > 0) state.resuming.set(r.tenantId, left);
      else if (resume) state.resuming.delete(r.tenantId);
      state.sends.delete(p);
      state.onSendDone();
    });
  state.sends.add(p);
}
