import type { HostIncarnation, HostProvider, ReadinessLayer } from "../../../contracts/index.ts";
import type { HostSpec, HostStartResult, HostStrategy, WarmPoolHost } from "../../../platform/hosts/types.ts";
import { runtimeRef, type BatchEntry } from "../../../streams/index.ts";
import { runtimeInstanceIdOf } from "../domain/runtime-id.ts";
import { hostFactsData } from "../domain/start-record.ts";
import {
  claimCarriedLayers,
  claimableMembers,
  POOL_LAYERS,
  POOL_MEMBER_PREFIX,
  refillCount,
  refillPace,
  reservedForReplacements,
} from "../domain/warm-pool.ts";
import { stamp, type Origin, type ProvisionerDeps } from "./context.ts";
import type { PlannedStart } from "./host-start.ts";
import type { RosterView } from "./roster-view.ts";
import type { Roster, RuntimeSummary } from "../domain/runtime-roster.ts";
import { RuntimeWriter } from "./runtime-writer.ts";
import { lookAtConflict, type SlotClaim } from "./runtime-slot.ts";
import { stopOrphanedMembers } from "./orphan-members.ts";

/** A strategy that can keep warm pool members (process and Kubernetes hosts). */
export type PoolableStrategy = HostStrategy & WarmPoolHost;
export const isPoolable = (s: HostStrategy | undefined): s is PoolableStrategy =>
  !!s && "startPooled" in s && "bind" in s && "canBind" in s;

/** How a claimed member is bound: PlannedStart.warm. */
export interface WarmBinding {
  readonly memberId: string;
  /** Layers the claim recorded for the runtime already (domain/warm-pool.ts `claimCarriedLayers`). */
  readonly layersRecorded: readonly ReadinessLayer[];
  bind(spec: HostSpec): Promise<HostStartResult>;
}

/** The prefix's runtime slot a claim takes in its batch (runtime-slot.ts). */
export interface WarmSlot {
  readonly slot: SlotClaim;
  /** The slot's batch entry naming the claimed member. */
  taken(memberId: string): BatchEntry;
}

export interface WarmPool {
  /**
   * Claims a ready member for `start` and registers the runtime, in one atomic batch conditional on
   * the member's last sequence (single-flight across replicas: a loser tries the next member) and on
   * the prefix's runtime slot (a start of the prefix committed meanwhile: `PlanAgain`). The
   * runtime's events are `registered`, `host-start-requested` and `host-started` (converged from the
   * member's incarnation). Undefined when no member could be claimed: the caller cold-starts.
   * `current`: the roster the caller planned on (read after the slot), instead of reading it again:
   * a member it shows ready but claimed meanwhile is a conflict of the batch, as from any stale read.
   * `replacement`: the start replaces a lost runtime and may take every member; a first placement
   * leaves the last quarter of the pool to replacements (domain/warm-pool.ts `reservedForReplacements`).
   * A claim that found no member starts a refill; a claimed member's caller calls `refill()` once
   * its bind counts as a start in flight, which a refill that is not urgent waits for.
   */
  claim(
    start: Omit<PlannedStart, "writer">,
    slot: WarmSlot,
    current?: Roster,
    replacement?: boolean,
  ): Promise<PlannedStart | undefined>;
  /** Starts members in the background until every provider's pool holds its size again. */
  refill(): void;
  /** Resolves once no refill is running (tests, shutdown). */
  idle(): Promise<void>;
  /** Some provider keeps a pool (a size above 0). */
  readonly enabled: boolean;
  /** Members of `provider`'s pool a first placement leaves to replacements (0 without a pool). */
  reserved(provider: HostProvider): number;
}

/**
 * The provisioner's warm pools (hosts.md "Warm pool"), one per provider with a size above 0.
 * `onReady` is told of each member this provisioner recorded `pool-member-ready` for; `yieldTo` is
 * awaited before a refill round that is not urgent (domain/warm-pool.ts `refillPace`): such a refill
 * runs after the binds and host starts in flight (busy-starts.ts), not beside them; `waiting` counts
 * the scale-outs waiting for a member or a start slot (they make the refill urgent).
 */
export function createWarmPool(
  d: ProvisionerDeps,
  roster: RosterView,
  onReady: () => void = () => undefined,
  yieldTo: () => Promise<void> = () => Promise.resolve(),
  waiting: () => number = () => 0,
): WarmPool {
  const sizes = Object.entries(d.poolSizes ?? {}).filter(([, n]) => (n ?? 0) > 0) as [HostProvider, number][];
  const filling = new Map<HostProvider, Promise<void>>();
  const again = new Set<HostProvider>();
  /** Members this process is claiming or has claimed, until its roster shows them claimed or ended. */
  const claiming = new Set<string>();
  /** Members this provisioner started and the roster last showed in its pool: what its pool holds. */
  const mine = new Set<string>();
  let orphansChecked = false;

  /** Resolves when refill() is called for `provider` (a claim made room, or a scale-out found no member). */
  const wakers = new Map<HostProvider, () => void>();
  const wake = (provider: HostProvider): Promise<void> =>
    again.has(provider) ? Promise.resolve() : new Promise((done) => wakers.set(provider, done));

  async function fill(provider: HostProvider, size: number, strategy: PoolableStrategy): Promise<void> {
    const starting = new Set<Promise<boolean>>();
    /** The last pass waited for the starts in flight: this one reads the roster again and does not wait twice. */
    let yielded = false;
    /** The wait for the starts in flight under way: a wake looks at the pool again, the wait goes on. */
    let yielding: Promise<true> | undefined;
    for (;;) {
      const waited = yielded;
      yielded = false;
      // Only the pass right after a wake goes on with the wait under way; any other starts its own.
      const pending = yielding;
      yielding = undefined;
      again.delete(provider);
      let current = await roster.current();
      // Once per process: the members a SIGKILLed predecessor left running are stopped and retired.
      if (provider === "process" && !orphansChecked) {
        orphansChecked = true;
        if ((await stopOrphanedMembers(d, strategy, current)) > 0) current = await roster.current();
      }
      forgetSettled(mine, current);
      // Process members: the ones this provisioner started (its predecessors' are stopped above, or
      // gone). Kubernetes members count for the whole control plane: any provisioner of it binds any of
      // them (a member started elsewhere is adopted at its claim: WarmPoolHost.adopt).
      const owns = provider === "process" ? (id: string) => mine.has(id) : undefined;
      const n = refillCount(current, provider, size, d.controlPlaneId, owns);
      if (n === 0) {
        if (again.has(provider)) continue;
        if (starting.size === 0) return;
        await Promise.race([Promise.all(starting), wake(provider)]);
        continue;
      }
      // Rounds, each on the roster as it is now: a pool drained below a quarter (or a scale-out
      // waiting) starts up to twice the start slots at once without waiting; a fuller one as many as
      // the start slots, after the binds in flight (refillPace). At session 23's fixed pace
      // (four at once, each after the binds, ≤ 3 s) the pool refilled at ~1–1.6 members/s and half
      // the fences of a P=20 proof with pool 64 found no member.
      // Boots still running count against the round's size: at most `pace.starts` at once, as before.
      const pace = refillPace(size - n, size, d.maxConcurrentHostStartups, waiting());
      const room = Math.min(n, pace.starts - starting.size);
      if (room <= 0) {
        await Promise.race([...starting, wake(provider)]);
        continue;
      }
      // The round is sized on the roster as it is after the wait, not before it: a burst of claims
      // during the wait (12 first placements of a k8s P=5 proof) had a round of one member, then a
      // second wait of up to 3 s, and the pool held 3 of 15 members for ~6 s before the proof's kills.
      // A claim meanwhile wakes the wait: a pool now drained below a quarter starts at once, else the
      // same wait goes on (bound and all). Before, the wait was judged on the roster before a burst of
      // claims (k8s P=5 proof: 1 claim, 11 more 0.4 s later) and the refill began at its 3 s bound.
      if (pace.yields && !waited) {
        const wait = pending ?? yieldTo().then(() => true as const);
        if (await Promise.race([wait, wake(provider).then(() => false)])) yielded = true;
        else yielding = wait;
        continue;
      }
      const round = await Promise.all(
        Array.from({ length: room }, () => startMember(d, provider, strategy, onReady, mine)),
      );
      const ready = round.map((r) => r.ready);
      for (const r of ready) {
        starting.add(r);
        void r.then(() => starting.delete(r));
      }
      // A claim while this round's members boot starts the next round at once (they are registered,
      // so the roster counts them as held: refillCount). Before, the loop waited for the round's
      // readiness first: on Kubernetes a member Pod's boot (~2 s quiet, 24 s at load 43) held back a
      // burst of claims' refill, and a P=5 proof's replacements found the pool empty and cold-started.
      const settled = await Promise.race([Promise.all(ready), wake(provider).then(() => undefined)]);
      // A round whose every start failed ends the refill (the next claim or host exit starts another):
      // a runtime that cannot start is not started again and again in a loop.
      if (settled && !settled.some(Boolean)) {
        await Promise.all(starting);
        return;
      }
    }
  }

  return {
    enabled: sizes.length > 0,
    async claim(start, slot, planned, replacement = false) {
      const provider = start.registration.hostProvider;
      const strategy = d.strategies.get(provider);
      if (!isPoolable(strategy) || !sizes.some(([p]) => p === provider)) return undefined;
      const current = planned ?? (await roster.current());
      forgetSettled(claiming, current);
      const members = claimableMembers(current, provider, d.controlPlaneId).filter(
        (m) => !claiming.has(m.runtimeInstanceId),
      );
      // A first placement leaves the pool's last members to replacements: it cold-starts instead.
      const spare = replacement ? members.length : members.length - this.reserved(provider);
      for (const [i, m] of members.entries()) {
        if (i >= spare) break;
        if (claiming.has(m.runtimeInstanceId)) continue;
        // Another provisioner's member (a restarted one's predecessor, or a replica's): bound here if
        // its host is proven live and unbound, else the pool would count it for ever and never serve it.
        if (!strategy.canBind(m.runtimeInstanceId) && !(await adoptMember(strategy, m))) continue;
        // Reserved in this process while its batch is in flight (and until the roster shows it
        // claimed): concurrent scale-outs take different members instead of all racing for the
        // oldest one, each loser paying a conflict and a re-read per member (claims came one every
        // ~300 ms at load ~20, members sitting ready). Across replicas the batch still decides.
        claiming.add(m.runtimeInstanceId);
        const incarnation = m.hostIncarnation as HostIncarnation;
        const o = start.origin;
        const carried = claimCarriedLayers(provider);
        const registered = [
          stamp(d, "runtime.registered", start.registration, o),
          stamp(d, "runtime.host-start-requested", { attempt: 1 }, o),
          stamp(
            d,
            "runtime.host-started",
            {
              hostIncarnation: incarnation,
              ...(m.pid !== undefined ? { pid: m.pid } : {}),
              ...(m.pod ?? {}),
              ...(m.node !== undefined ? { node: m.node } : {}),
              convergence: "converged",
              convergenceSource: `warm-pool:${m.runtimeInstanceId}`,
            },
            o,
          ),
          ...carried.map((layer) =>
            stamp(
              d,
              "runtime.readiness-layer-passed",
              {
                layer,
                hostIncarnation: incarnation,
                detail: `warm pool member ${m.runtimeInstanceId}: ${layer} proven at its readiness, unchanged at the claim`,
              },
              o,
            ),
          ),
        ];
        let stored: readonly { readonly seq: number }[];
        try {
          stored = await d.store.appendAtomic([
            slot.taken(m.runtimeInstanceId),
            {
              ref: runtimeRef(m.runtimeInstanceId),
              expectedSeq: m.lastSeq,
              events: [
                stamp(
                  d,
                  "runtime.pool-member-claimed",
                  {
                    runtimeInstanceId: start.runtimeInstanceId as never,
                    hostIncarnation: incarnation,
                    scaleOutRequestId: start.registration.scaleOutRequestId!,
                    ...(start.registration.tenantId ? { tenantId: start.registration.tenantId } : {}),
                  },
                  o,
                ),
              ],
            },
            { ref: runtimeRef(start.runtimeInstanceId), expectedSeq: 0, events: registered },
          ]);
        } catch (e) {
          // The prefix's slot moved (or the new id exists): plan again. Else another claimer won this
          // member (or it ended meanwhile): look at the next one.
          claiming.delete(m.runtimeInstanceId);
          const again = await lookAtConflict(d, e, slot.slot, start.runtimeInstanceId);
          if (again) throw again;
          continue;
        }
        // The batch's last entries are the runtime's events: its writer starts from them, not a re-read.
        const writer = RuntimeWriter.after(
          d.store,
          start.runtimeInstanceId,
          registered,
          stored.slice(-registered.length),
        );
        const token = d.commandTokenFor(m.runtimeInstanceId);
        const memberId = m.runtimeInstanceId;
        d.log("warm pool member claimed", { memberId, runtimeInstanceId: start.runtimeInstanceId });
        // No refill from here: the caller starts it once it counts this bind as a start in flight
        // (provisioner.ts), else the refill's yield found none in flight and members booted beside it.
        return {
          ...start,
          writer,
          warm: { memberId, layersRecorded: carried, bind: (spec) => strategy.bind(memberId, token, spec) },
        };
      }
      this.refill();
      return undefined;
    },
    reserved(provider) {
      const size = sizes.find(([p]) => p === provider)?.[1];
      return size === undefined ? 0 : reservedForReplacements(size);
    },
    refill() {
      for (const [provider, size] of sizes) {
        const strategy = d.strategies.get(provider);
        if (!isPoolable(strategy)) continue;
        if (filling.has(provider)) {
          again.add(provider);
          wakers.get(provider)?.();
          wakers.delete(provider);
          continue;
        }
        const p = fill(provider, size, strategy)
          .catch((e) => d.log("warm pool refill failed", { provider, err: String(e) }))
          .finally(() => filling.delete(provider));
        filling.set(provider, p);
      }
    },
    async idle() {
      while (filling.size > 0) await Promise.all([...filling.values()]);
    },
  };
}

/** Whether `strategy` takes on member `m` started elsewhere (only Kubernetes members: WarmPoolHost.adopt). */
async function adoptMember(strategy: PoolableStrategy, m: RuntimeSummary): Promise<boolean> {
  if (!strategy.adopt || !m.hostIncarnation || !m.pod) return false;
  return strategy.adopt(m.runtimeInstanceId, { hostIncarnation: m.hostIncarnation, ...m.pod });
}

/** Drops the members `current` shows claimed or ended from a set this process keeps of members. */
function forgetSettled(members: Set<string>, current: Roster): void {
  for (const id of members) {
    const seen = current.runtimes.get(id);
    if (seen?.pool?.claimedFor || seen?.endedBy) members.delete(id);
  }
}

/**
 * Starts one pool member: `pool-member-registered` (sequence 0), `host-started` at spawn, the pool
 * layers, then `pool-member-ready`. A failure kills what it started and records
 * `host-start-failed` + `retired`; the next refill starts another. Resolves whether the member became ready.
 */
async function startMember(
  d: ProvisionerDeps,
  provider: HostProvider,
  strategy: PoolableStrategy,
  onReady: () => void,
  mine: Set<string>,
): Promise<{ readonly ready: Promise<boolean> }> {
  const id = runtimeInstanceIdOf(POOL_MEMBER_PREFIX, d.newSuffix());
  mine.add(id);
  const o: Origin = { instanceId: d.instanceId, correlationId: id, causationId: id };
  const w = new RuntimeWriter(d.store, id, 0);
  await w.append([
    stamp(
      d,
      "runtime.pool-member-registered",
      {
        controlPlaneId: d.controlPlaneId as never,
        hostProvider: provider,
        pool: "default",
        requiredLayers: [...POOL_LAYERS],
      },
      o,
    ),
  ]);
  const fail = async (detail: string, kill?: HostStartResult): Promise<false> => {
    if (kill && kill.outcome !== "rejected") await strategy.kill(id, kill.host, d.killBudgetMs).catch(() => undefined);
    await w.append(
      [
        stamp(d, "runtime.host-start-failed", { reason: { code: "host-creation-failed", detail } }, o),
        stamp(d, "runtime.retired", { reason: "warm pool member failed to start" }, o),
      ],
      { evenIfEnded: true },
    );
    d.log("warm pool member failed", { memberId: id, detail });
    return false;
  };
  const boot = async (): Promise<boolean> => {
    const r = await strategy.startPooled(id, d.commandTokenFor(id), async (h) => {
      await w.append([stamp(d, "runtime.host-started", { ...hostFactsData(h), convergence: "created" }, o)]);
    });
    if (r.outcome === "rejected") return fail(r.reason.detail.slice(0, 2000));
    const hostIncarnation = r.host.hostIncarnation as HostIncarnation;
    try {
      await w.append([
        ...POOL_LAYERS.map((layer) =>
          stamp(
            d,
            "runtime.readiness-layer-passed",
            { layer, hostIncarnation, detail: `warm pool member: ${layer} proven by the ${provider} strategy` },
            o,
          ),
        ),
        stamp(d, "runtime.pool-member-ready", { hostIncarnation, bindEndpoint: r.endpoint.endpoint }, o),
      ]);
      onReady();
      return true;
    } catch (e) {
      return fail(`recording the pool member failed: ${String((e as Error).message ?? e)}`.slice(0, 2000), r);
    }
  };
  // Never rejects: the refill loop goes on without it (a start that throws was logged as failed).
  const ready = boot().catch((e: unknown) => {
    d.log("warm pool member failed", { memberId: id, detail: String(e) });
    return false;
  });
  return { ready };
}
