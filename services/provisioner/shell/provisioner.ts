import { LifecycleGate } from "../../../platform/hosts/lifecycle-gate.ts";
import { isDroverError, type HostProvider } from "../../../contracts/index.ts";
import type { StoredEvent } from "../../../streams/index.ts";
import { workerKindsOf, workerOf } from "./worker-of.ts";
import { recordDeploy } from "./deploys.ts";
import { planRequest } from "../domain/plan.ts";
import type { Roster } from "../domain/runtime-roster.ts";
import type { RequestState } from "../domain/request-state.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { abandonAttempt } from "./abandon.ts";
import { closeExhausted } from "./exhausted.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";
import { observeHostExits } from "./host-exits.ts";
import { driveHostStart, warmMemberServes, type PlannedStart } from "./host-start.ts";
import { observe, originOf, outcome, settle } from "./request-writer.ts";
import { RosterView } from "./roster-view.ts";
import { RuntimeWriter } from "./runtime-writer.ts";
import { lookAtConflict, PlanAgain, readSlot, slotEntry, type SlotClaim } from "./runtime-slot.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { StartGate, type Ticket } from "./start-gate.ts";
import { BusyStarts } from "./busy-starts.ts";
import { bootHoldOf } from "./boot-hold.ts";
import { createWarmPool, type WarmPool } from "./warm-pool.ts";
import { replacesLost } from "../domain/warm-pool.ts";

/**
 * How long a warm pool refill waits for the scale-outs in flight to settle before it starts a member
 * anyway (a Pod start that takes long never starves the pool).
 */
const REFILL_YIELD_MAX_MS = 3_000;

/** Plans of one decision whose start lost the prefix's runtime slot before it gives up (the delivery is retried). */
const MAX_PLANS = 8;

/** decide(): a cold start is planned but this handler holds no start slot yet (nothing was written). */
const WAIT = Symbol("wait for a start slot or a warm member");

/** One scale-out request's handling, as the consumer (or a test) drives it. */
export interface Provisioner {
  /**
   * Handles a delivered `scaleout requested` event: resolves once the request is settled (fulfilled,
   * rejected, expired), or is not this handler's to drive (terminal already, or observed concurrently
   * by another handler). Idempotent: redelivery converges using the request's own events.
   * Failure modes: store errors reject (the consumer naks; the redelivery takes over). On the
   * consumer's last delivery (`delivery.last`), and for an error the consumer terminates (a
   * non-retryable one: no redelivery follows either), a failure closes the request instead
   * (exhausted.ts: `scale-out-deliveries-exhausted`); only a failure of that close rejects.
   */
  handle(requested: StoredEvent, delivery?: { readonly last: boolean }): Promise<void>;
  /** Stops recording host observations (does not kill hosts). */
  close(): void;
  /** The warm pools (hosts.md "Warm pool"); `refill()` once at start-up fills them. */
  readonly pool: WarmPool;
  /** The runtime roster this provisioner reads (drained-runtime retirement reads it too). */
  readonly roster: RosterView;
  /** Runtimes being retired deliberately (retire-drained.ts): their exits are not recorded as crashes. */
  readonly retiring: Set<string>;
}

/**
 * The provisioner's shell: observe → plan (pure) → register → start → readiness → publish → settle.
 * The plan and the registration of a new runtime run under a per-prefix gate, so two requests of
 * one tenant in this process do not race each other; across replicas the registration takes the
 * prefix's runtime slot in the same atomic batch (runtime-slot.ts), so two can never both pass the limit; cold host starts are bounded by
 * `maxConcurrentHostStartups` (start-gate.ts; a warm pool bind starts no host and is not, and a
 * request waiting for a slot takes a member that becomes ready meanwhile). Deliveries of one request in this process join the one in flight.
 */
export function createProvisioner(d: ProvisionerDeps): Provisioner {
  const roster = new RosterView(d.store, d.layout, d.roster);
  const prefixGate = new LifecycleGate();
  const gate = new StartGate(d.maxConcurrentHostStartups);
  const inFlight = new Map<string, Promise<void>>();
  /** Requests being driven here, by their runtime prefix. */
  const driving = new Map<string, number>();
  const providers = [...d.strategies.keys()] as HostProvider[];
  // Members still booting are held while starts are in flight or a published runtime was just lost (boot-hold.ts).
  const busy = new BusyStarts(() => boots.started());
  const boots = bootHoldOf(d, busy, gate);
  // A refill that is not urgent starts a member only once the binds and host starts in flight are
  // done (or after a bound): a member booting beside the binds of a burst of recovery claims took
  // the CPU they needed (busy-starts.ts). A request waiting for a member or a slot makes it urgent
  // (domain/warm-pool.ts refillPace): the member is for it.
  const pool = createWarmPool(
    d,
    roster,
    () => gate.memberReady(),
    () => busy.quiet(REFILL_YIELD_MAX_MS),
    () => gate.waiters,
  );
  const retiring = new Set<string>();
  const exits = observeHostExits(d, retiring, () => pool.refill(), boots.lost);

  async function drive(
    tenantId: string,
    requestId: string,
    prefixAsked: string | undefined,
    deliveredSeq: number,
  ): Promise<void> {
    const t0 = performance.now();
    // The plan's reads (the prefix's slot, then the roster after it) go side by side with `observe`
    // instead of after it: a recovery claim waited for four round trips one after another.
    // `prefixAsked` is the request's prefix as delivered, undefined while another request of the
    // prefix is driven here: a plan under the gate after that one's start would count a roster
    // without it (its batch would conflict on the slot and plan again).
    const reads = prefixAsked === undefined ? undefined : planReads(tenantId, prefixAsked);
    reads?.catch(() => undefined); // awaited by the first plan, which reads again after a failure
    let s = await observe(d, tenantId, requestId, deliveredSeq);
    const observedMs = Math.round(performance.now() - t0);
    if (!s) return;
    const prefix = s.request?.policy.runtimeInstanceIdPrefix ?? "";
    // A start first tries the warm pool; a cold start waits for a host start slot (or, while it
    // waits, for a member to become ready: then it is claimed instead), and plans again once it may start.
    let ticket: Ticket | undefined;
    try {
      const first = s;
      let planned = await prefixGate.run(prefix, () => decide(first, prefix === prefixAsked && reads ? { reads } : {}));
      for (let waits = 1; planned === WAIT; waits++) {
        // A replacement of a lost runtime (domain/warm-pool.ts `replacesLost`) may take the pool's last
        // members and is served first; a first placement that finds only those waits for a start slot
        // (a member becoming ready goes to a replacement), unless the pool is too small to keep any.
        const replacement = replacesLost(await roster.current(), prefix, s.request?.replaces);
        const mayTakeMember = replacement || (s.request ? pool.reserved(s.request.providerHint) === 0 : true);
        d.log("scale-out waiting for a start slot or a member", { requestId, waits, replacement });
        ticket = await gate.acquire(pool.enabled && mayTakeMember, replacement);
        // Planned again on the roster as it is now (a runtime of the tenant may have come meanwhile).
        // Only a slot lets it register a cold start: a member ticket whose claim finds no member (the
        // count is a hint) waits again, unregistered. Registered first, it waited for a slot after its
        // registration (P=20: one replacement ~30 s between `registered` and its host start).
        const mayStartCold = ticket === "slot";
        planned = await prefixGate.run(prefix, () => decide(first, { mayStartCold }));
      }
      if (!planned) return;
      // Where a start's time goes before its host: the request observed, then planned and registered.
      d.log("scale-out planned", {
        requestId,
        runtimeInstanceId: planned.runtimeInstanceId,
        warm: !!planned.warm,
        observedMs,
        plannedMs: Math.round(performance.now() - t0),
      });
      // A member claimed without a member ticket is one fewer known; a slot held for it goes to the next cold start.
      if (planned.warm && ticket !== "member") gate.memberTaken();
      if (planned.warm && ticket === "slot") {
        gate.releaseSlot();
        ticket = undefined;
      }
      const driving = busy.track(driveHostStart(d, planned));
      // The claim's refill starts only now that its bind counts as in flight: a refill round that
      // yields (not urgent) waits for it. Started from the claim itself, the round found no start in
      // flight (the bind was not tracked yet) and booted members beside the binds of a recovery
      // burst (P=5 proof at load ~20: four members spawned 1 ms after a claim, booting ~3 s across
      // the next six binds).
      if (planned.warm) pool.refill();
      let r = await driving;
      if (!r.ok && planned.warm) {
        // A failed bind (member gone, refused, wrong incarnation) is not the request's failure: the
        // claimed runtime is retired (its RuntimeInstanceId never gets a second host) and the plan,
        // which no longer counts it, cold-starts a new one.
        d.log("warm pool bind failed: cold start", {
          requestId,
          runtimeInstanceId: planned.runtimeInstanceId,
          reason: r.reason,
        });
        ticket = await gate.acquire(false);
        const again = await observe(d, tenantId, requestId, deliveredSeq);
        if (!again) return;
        // Settled as this second observation sees the request: with the first one, settle() read our own
        // newer `observed` as another handler's takeover and wrote nothing (the request hung, unsettled).
        s = again;
        const cold = await prefixGate.run(prefix, () => decide(again, { cold: true, mayStartCold: true }));
        if (!cold || cold === WAIT) return;
        planned = cold;
        r = await busy.track(driveHostStart(d, cold));
      }
      const p = planned;
      if (r.ok) exits.published(p);
      const settled = r.ok
        ? outcome.fulfilled(d, s, p.runtimeInstanceId)
        : outcome.rejected(d, s, r.reason, p.runtimeInstanceId);
      const written = await settle(d, s, settled);
      d.log(r.ok ? "scale-out fulfilled" : "scale-out rejected", {
        requestId,
        ...(written ? {} : { settledBy: "another handler" }),
        runtimeInstanceId: p.runtimeInstanceId,
        ...(r.ok ? {} : { reason: r.reason }),
      });
    } finally {
      if (ticket === "slot") gate.releaseSlot();
    }
  }

  /** The prefix's slot, then the roster (read after the slot: runtime-slot.ts), with their times. */
  async function planReads(tenantId: string, prefix: string): Promise<PlanReads> {
    const t0 = performance.now();
    const slot = await readSlot(d, tenantId, prefix);
    const slotMs = Math.round(performance.now() - t0);
    const current = await roster.current();
    return { slot, current, slotMs, rosterMs: Math.round(performance.now() - t0) - slotMs };
  }

  /**
   * Plans under the prefix gate; settles everything but a start, and registers a start before the
   * gate opens: a claimed warm member, or — `mayStartCold`, i.e. holding a start slot — a cold
   * start; without it, {@link WAIT} (nothing written).
   */
  async function decide(s: RequestState, opts: PlanOptions): Promise<PlannedStart | typeof WAIT | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Reads made before the gate serve the first plan only (a second one needs a fresh roster).
        const { reads, ...rest } = opts;
        return await decideOnce(s, attempt === 1 && reads ? { ...rest, reads } : rest);
      } catch (e) {
        if (!(e instanceof PlanAgain) || attempt >= MAX_PLANS) throw e;
        d.log("runtime start lost its slot: planning again", { requestId: s.request?.requestId, why: e.why, attempt });
      }
    }
  }

  /** One plan; throws `PlanAgain` when its start lost the prefix's runtime slot (runtime-slot.ts). */
  async function decideOnce(s: RequestState, opts: PlanOptions): Promise<PlannedStart | typeof WAIT | undefined> {
    const req = s.request!;
    // The slot is read before the roster: a start the roster misses moved it, so ours then conflicts.
    // A scale-out request is tenant-scoped: its `requested` always names the tenant (its subject's).
    const t0 = performance.now();
    const early = await opts.reads?.catch(() => undefined);
    const { slot, current, slotMs, rosterMs } =
      early ?? (await planReads(s.tenantId as string, req.policy.runtimeInstanceIdPrefix));
    const plan = planRequest({
      request: s,
      roster: current,
      now: d.clock.now(),
      suffix: d.newSuffix(),
      providers,
      ...workerKindsOf(d, s.tenantId),
    });
    const origin = originOf(d, s);
    for (const earlier of plan.abandon) {
      if ((await abandonAttempt(d, earlier, req.providerHint, origin)) === "published") {
        await settle(d, s, outcome.fulfilled(d, s, earlier.runtimeInstanceId));
        return undefined;
      }
    }
    let next = plan.next;
    switch (next.kind) {
      case "fulfil":
        await settle(d, s, outcome.fulfilled(d, s, next.runtimeInstanceId));
        return undefined;
      case "expire":
        await settle(d, s, outcome.expired(d, s));
        return undefined;
      case "reject":
        await settle(d, s, outcome.rejected(d, s, next.reason));
        d.log("scale-out rejected", { requestId: req.requestId, reason: next.reason });
        return undefined;
      case "start": {
        const built = await workerOf(
          d,
          next.registration.tenantId,
          next.registration.hostProvider,
          req.workerVersion,
          current,
        );
        if (built && "reason" in built) {
          await settle(d, s, outcome.rejected(d, s, built.reason));
          d.log("scale-out rejected", { requestId: req.requestId, reason: built.reason });
          return undefined;
        }
        if (built) next = { ...next, registration: { ...next.registration, worker: built.worker } };
        // A runtime of the tenant's current build, not one asked for by version: a build the
        // deploys do not record yet is a deploy (the module changed since the last one), recorded
        // before the runtime registers, so it is current, not draining (deploys.ts).
        if (built && !req.workerVersion && !built.worker.pinned && next.registration.tenantId)
          await recordDeploy(
            d,
            next.registration.tenantId,
            built.worker,
            workerKindsOf(d, s.tenantId).workerKinds ?? [],
          );
        const runtimeOrigin = { ...origin, tenantId: next.registration.tenantId };
        const taken = {
          runtimeInstanceId: next.runtimeInstanceId as never,
          scaleOutRequestId: req.requestId,
          live: next.live,
          maxRuntimeInstances: req.policy.maxRuntimeInstances,
        };
        // Recovery scale-outs and first scale-outs alike claim from the warm pool first (a first one
        // only while more than the replacements' reserve is left); a Pod whose worker is another
        // image than the pool's runs cold (a bound member keeps its image).
        const warm =
          opts.cold || !warmMemberServes(d, next.registration)
            ? undefined
            : await pool.claim(
                { runtimeInstanceId: next.runtimeInstanceId, registration: next.registration, origin: runtimeOrigin },
                { slot, taken: (member) => slotEntry(d, slot, { ...taken, warmPoolMember: member }, origin) },
                // The roster just planned on: a second catch-up per claim queued behind the others' at a burst.
                current,
                replacesLost(current, req.policy.runtimeInstanceIdPrefix, req.replaces),
              );
        if (warm) {
          d.log("warm pool member claimed: timings", {
            requestId: req.requestId,
            slotMs,
            rosterMs,
            claimMs: Math.round(performance.now() - t0) - (early ? 0 : slotMs + rosterMs),
            readsEarly: !!early,
          });
          return warm;
        }
        if (!opts.mayStartCold) return WAIT;
        const registered = [
          stamp(d, "runtime.registered", next.registration, runtimeOrigin),
          stamp(d, "runtime.host-start-requested", { attempt: 1 }, runtimeOrigin),
        ];
        let stored: readonly { readonly seq: number }[];
        try {
          // Sequence 0 on the runtime: a suffix collision with an existing runtime is a conflict, never a reuse.
          stored = await d.store.appendAtomic([
            slotEntry(d, slot, taken, origin),
            { ref: runtimeRef(next.runtimeInstanceId), expectedSeq: 0, events: registered },
          ]);
        } catch (e) {
          throw (await lookAtConflict(d, e, slot, next.runtimeInstanceId)) ?? e;
        }
        return {
          runtimeInstanceId: next.runtimeInstanceId,
          registration: next.registration,
          writer: RuntimeWriter.after(d.store, next.runtimeInstanceId, registered, stored.slice(-registered.length)),
          origin: runtimeOrigin,
        };
      }
      default:
        return assertNever(next, "plan");
    }
  }

  return {
    handle(requested, delivery) {
      if (requested.event.type !== "scaleout.requested") return Promise.resolve();
      const tenantId = requested.event.tenantId;
      const requestId = requested.event.data.requestId;
      const key = `${tenantId}/${requestId}`;
      const running = inFlight.get(key);
      const prefix = requested.event.data.policy.runtimeInstanceIdPrefix;
      const p =
        running ??
        (() => {
          const alone = !driving.has(prefix);
          driving.set(prefix, (driving.get(prefix) ?? 0) + 1);
          return drive(tenantId, requestId, alone ? prefix : undefined, requested.seq).finally(() => {
            inFlight.delete(key);
            const n = (driving.get(prefix) ?? 1) - 1;
            if (n > 0) driving.set(prefix, n);
            else driving.delete(prefix);
          });
        })();
      if (!running) inFlight.set(key, p);
      // No redelivery follows a failure of the last delivery, nor one the consumer terminates (an
      // error a redelivery cannot change: consumer-outcome.ts), so neither may leave the request open.
      return p.catch(async (e: unknown) => {
        const refused = isDroverError(e) && !e.retryable;
        if (!delivery?.last && !refused) throw e;
        const why = refused ? "refused" : "exhausted";
        const done = await closeExhausted(d, roster, tenantId, requestId, e, why, requested.seq).catch(
          (closeErr: unknown) => {
            d.log("scale-out left open: closing it failed", { requestId, err: String(closeErr) });
            throw e;
          },
        );
        d.log(`scale-out closed: ${refused ? "delivery refused" : "deliveries exhausted"}`, {
          requestId,
          done,
          lastError: String(e),
        });
      });
    },
    close() {
      exits.stop();
      boots.stop();
    },
    pool,
    roster,
    retiring,
  };
}

/** What a plan reads: the prefix's runtime slot, then the roster. */
interface PlanReads {
  readonly slot: SlotClaim;
  readonly current: Roster;
  readonly slotMs: number;
  readonly rosterMs: number;
}

interface PlanOptions {
  readonly cold?: boolean;
  readonly mayStartCold?: boolean;
  /** The reads made side by side with `observe` (first plan only). */
  readonly reads?: Promise<PlanReads>;
}
