import { isDroverError, type DroverEvent, type HostIncarnation, type TenantId } from "../../../contracts/index.ts";
import type { HostObservation } from "../../../platform/hosts/types.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";
import { recordDrainedExit } from "./drained-exit.ts";
import type { PlannedStart } from "./host-start.ts";

const MAX_CONFLICTS = 8;

/**
 * Records what a host strategy observed (a child exited, a Pod went away) as `runtime host-exited`:
 * evidence for recovery, which decides and fences; the provisioner decides nothing here. Once per
 * incarnation and kind: a repeated observation (or a retry after a timeout) appends nothing.
 * Unknown runtimes (never registered in this stream) are ignored.
 * Failure modes: store errors propagate to the caller (recordHostExitPatiently retries the
 * transient ones).
 */
export async function recordHostExit(d: ProvisionerDeps, fact: HostObservation, known?: KnownRuntime): Promise<void> {
  const ref = runtimeRef(fact.runtimeInstanceId);
  // The runtime this provisioner published, its last sequence known: appended without reading it
  // first (a kill's first record, everything in its recovery waits for it). Any other writer since
  // (recovery's suspicion, an exit already recorded) is a conflict: the read below decides then.
  if (known && known.hostIncarnation === fact.hostIncarnation) {
    try {
      await d.store.append(ref, hostExited(d, fact, known), { expectedSeq: known.lastSeq });
      return;
    } catch (err) {
      if (!isDroverError(err, "version-conflict")) throw err;
    }
  }
  for (let conflicts = 0; ; conflicts++) {
    const h = await d.store.read(ref);
    // A warm pool member is registered by `pool-member-registered`: its exit is evidence like a runtime's.
    const registered = h.events.find(
      (s) => s.event.type === "runtime.registered" || s.event.type === "runtime.pool-member-registered",
    );
    if (!registered) return;
    const already = h.events.some(
      (s) =>
        s.event.type === "runtime.host-exited" &&
        s.event.data.hostIncarnation === fact.hostIncarnation &&
        s.event.data.kind === fact.kind,
    );
    if (already) return;
    const reg = registered.event.type === "runtime.registered" ? registered.event : undefined;
    const e = hostExited(d, fact, {
      correlationId: registered.event.correlationId ?? fact.runtimeInstanceId,
      tenantId: reg?.data.tenantId,
    });
    try {
      await d.store.append(ref, e, { expectedSeq: h.lastSeq });
      return;
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
    }
  }
}

/** What this provisioner knows of a runtime it published (provisioner.ts): enough to record its exit unread. */
export interface KnownRuntime {
  readonly hostIncarnation: string;
  /** The runtime aggregate's last sequence as this provisioner's writer left it. */
  readonly lastSeq: number;
  /** Its `registered` event's correlation id, and its tenant (none for a shared runtime). */
  readonly correlationId: string;
  readonly tenantId: TenantId | undefined;
}

/** What `p`'s writer knows of the runtime it published (undefined before its host is recorded). */
function knownRuntime(p: PlannedStart): KnownRuntime | undefined {
  const hostIncarnation = p.writer.state?.hostIncarnation;
  if (!hostIncarnation) return undefined;
  const { correlationId } = p.origin;
  return { hostIncarnation, lastSeq: p.writer.lastSeq, correlationId, tenantId: p.registration.tenantId };
}

function hostExited(
  d: ProvisionerDeps,
  fact: HostObservation,
  of: Pick<KnownRuntime, "correlationId" | "tenantId">,
): DroverEvent {
  return stamp(
    d,
    "runtime.host-exited",
    {
      hostIncarnation: fact.hostIncarnation as HostIncarnation,
      kind: fact.kind,
      exitCode: fact.kind === "exited" ? fact.exitCode : null,
      signal: fact.kind === "exited" ? fact.signal : null,
      detail: fact.kind === "exited" ? `exit observed by ${d.instanceId}` : fact.detail.slice(0, 500),
    },
    {
      instanceId: d.instanceId,
      correlationId: of.correlationId,
      causationId: `host-observation:${fact.hostIncarnation}`,
      ...(of.tenantId ? { tenantId: of.tenantId } : {}),
    },
  );
}

/** Attempts, 1 s apart, to record one observation while JetStream does not answer (a leader election takes ~10 s). */
const UNAVAILABLE_ATTEMPTS = 60;

/**
 * `recordHostExit`, retried while the event store is unavailable (no answer, a cluster electing a
 * leader): an exit lost there left a runtime that died during a NATS leader kill counted as live
 * for ever, and its tenant's scale-outs refused at the runtime limit (seen in `drover proof
 * --kill-nats-leader`). Each attempt re-reads, so a retry never records an exit twice.
 */
export async function recordHostExitPatiently(
  d: ProvisionerDeps,
  fact: HostObservation,
  known?: KnownRuntime,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      // Unread only on the first attempt: after a failure the log may hold what the attempt did.
      return await recordHostExit(d, fact, attempt === 1 ? known : undefined);
    } catch (e) {
      const transient = isDroverError(e, "event-store-unavailable") && e.retryable !== false;
      if (!transient || attempt >= UNAVAILABLE_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

/**
 * Records every host exit the strategies observe (but of runtimes being retired), then `after()`;
 * the runtimes this provisioner published, as their writers left them, get their exit appended unread
 * (and `lost()` is told first: a replacement will follow). An exit that ends a runtime's own drain (a
 * stop from outside drover, drained-exit.ts) is recorded as a planned stop instead: no `host-exited`,
 * no `lost()` (nothing was lost, and nothing needs replacing but what admission asks for); a drained
 * Pod's `container-terminated` records nothing, its `pod-deleted` decides.
 */
export function observeHostExits(
  d: ProvisionerDeps,
  retiring: ReadonlySet<string>,
  after: () => void,
  lost: () => void = () => undefined,
): { published(p: PlannedStart): void; stop(): void } {
  const published = new Map<string, KnownRuntime>();
  const stops = [...d.strategies.values()].map((s) =>
    s.observe((fact) => {
      const known = published.get(fact.runtimeInstanceId);
      published.delete(fact.runtimeInstanceId);
      if (retiring.has(fact.runtimeInstanceId)) return;
      void (async () => {
        const drained = await recordDrainedExit(d, fact).catch((e: unknown) => {
          d.log("could not record a drained runtime's exit as a planned stop", { fact, err: String(e) });
          return "not-drained" as const;
        });
        if (drained === "retired") {
          d.log("runtime stopped from outside drover: planned stop recorded", { fact });
          return;
        }
        if (drained === "deferred") {
          // A drained Pod's container ended: its UID gone (pod-deleted) decides, with what is known of it.
          if (known && !published.has(fact.runtimeInstanceId)) published.set(fact.runtimeInstanceId, known);
          d.log("runtime Pod drained and its container ended: planned stop awaits the Pod's deletion", { fact });
          return;
        }
        if (known) lost();
        // Another writer since the drain's check: the log decides (recordHostExit reads it).
        await recordHostExitPatiently(d, fact, drained === "claimed" ? undefined : known);
      })()
        .catch((e) => d.log("could not record a host observation", { fact, err: String(e) }))
        .finally(after);
    }),
  );
  return {
    published(p) {
      const known = knownRuntime(p);
      if (known) published.set(p.runtimeInstanceId, known);
    },
    stop: () => stops.forEach((stop) => stop()),
  };
}
