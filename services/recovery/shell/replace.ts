import {
  isDroverError,
  RuntimeInstanceId,
  runtimePrefixOf,
  tenantSettingsOf,
  type RuntimeFailureIncidentId,
  type TenantSettings,
  type WorkerVersion,
} from "../../../contracts/index.ts";
import {
  planScaleOut,
  scaleOutDedupeKey,
  scaleOutRequestData,
  scaleOutRequestIdOf,
  type KnownRequest,
} from "../../../aggregates/scale-out-plan.ts";
import { envelope } from "../../../platform/envelope.ts";
import { scaleOutRef, type StoredEvent } from "../../../streams/index.ts";
import { classifyInventory } from "../domain/classify.ts";
import type { RuntimeRecord } from "../domain/runtime-health.ts";
import type { RecoveryDeps } from "./deps.ts";

/** The reason admission gives when it scales out for a queued run: the replacement joins that request's key. */
const REASON_CODE = "no-visible-capacity";
/** The newest generations of a key read to plan (older ones ended or lapsed before these were made). */
const WINDOW = 8;
const ATTEMPTS = 4;
/** An open request made before the loss is looked at this often until it ends, at most SETTLE_BOUND_MS. */
const SETTLE_POLL_MS = 200;
const SETTLE_BOUND_MS = 15_000;

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/**
 * Asks for the replacement of a suspected runtime when its fence begins, side by side with the kill and
 * the pause of its executions: starting a runtime moves no work (only moving work waits for `fenced`),
 * and a suspected runtime never serves again, fenced or not (its lifecycle only moves forward). One request
 * per scale-out key of the runs the runtime held (tenant scope, prefix, pinned worker version), made
 * exactly as admission makes its own for a queued run: the same dedupe key, the same deterministic
 * request id per generation, the same planner, a conditional append that expects the request not to
 * exist. Admission, when the requeued run finds no capacity, finds this request open and waits for it
 * instead of making a second; whichever appends first makes the one request. Nothing is asked for a
 * runtime without work, a tenant that may not grow, or a key whose open request (or fresh runtime)
 * already covers it; a request whose causation is this incident makes a re-run a no-op. A failure
 * here is logged only: admission's own scale-out stays the fallback.
 * The loss frees the runtime's place under the tenant's limit: a request made before it and rejected
 * at the limit counted the lost runtime and does not hold the replacement back (planScaleOut's
 * `lostMs`); one still open is looked at until it ends (the provisioner may reject it on a roster
 * that still counts the lost runtime), then the plan is made again.
 */
export async function requestReplacements(
  deps: RecoveryDeps,
  rt: RuntimeRecord,
  incidentId: RuntimeFailureIncidentId,
): Promise<void> {
  const lostMs = deps.env.clock.now().getTime();
  const keys = new Map<string, { tenant: TenantSettings; workerVersion?: WorkerVersion; runs: number }>();
  for (const item of classifyInventory(rt.runtimeInstanceId, [...deps.state.runs.values()])) {
    const tenant = tenantSettingsOf(deps.config, item.tenantId);
    const workerVersion = deps.state.runs.get(`${item.tenantId}/${item.sharedRunId}`)?.state.workerVersion;
    const key = scaleOutDedupeKey(deps.config.controlPlaneId, tenant, REASON_CODE, workerVersion);
    const k = keys.get(key) ?? { tenant, ...(workerVersion ? { workerVersion } : {}), runs: 0 };
    k.runs += 1;
    keys.set(key, k);
  }
  await Promise.all(
    [...keys].map(([key, k]) =>
      requestOne(deps, rt, incidentId, key, k.tenant, k.runs, k.workerVersion, lostMs).catch((e: unknown) =>
        deps.log.warn(
          { runtime: rt.runtimeInstanceId, dedupeKey: key, err: String(e) },
          "early replacement request failed; admission scales out for the requeued runs",
        ),
      ),
    ),
  );
}

async function requestOne(
  deps: RecoveryDeps,
  rt: RuntimeRecord,
  incidentId: RuntimeFailureIncidentId,
  dedupeKey: string,
  tenant: TenantSettings,
  runs: number,
  workerVersion: WorkerVersion | undefined,
  lostMs: number,
): Promise<void> {
  const causationId = `replace:${incidentId}`;
  // The lost runtime counted toward the limit only if it has the key's prefix (a dedicated tenant's own).
  const counted = rt.runtimeInstanceId.startsWith(`${runtimePrefixOf(tenant)}-`);
  for (let attempt = 1; attempt <= ATTEMPTS;) {
    const now = deps.env.clock.now().getTime();
    const { known, next, ours } = await history(deps, tenant.tenantId, dedupeKey, causationId);
    if (ours) return;
    const plan = planScaleOut(
      known,
      now,
      deps.config.heartbeatIntervalMs,
      tenant.maxRuntimeInstances,
      counted ? lostMs : undefined,
    );
    if (plan.kind === "wait-for") {
      const open = known.find((k) => k.requestId === plan.requestId);
      if (!counted || open?.requestedMs === undefined || open.requestedMs >= lostMs) return;
      if (now - lostMs > SETTLE_BOUND_MS) return;
      await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      continue;
    }
    if (plan.kind !== "request") return;
    attempt++;
    const requestId = scaleOutRequestIdOf(deps.sha256, dedupeKey, next);
    const detail = `replacement for suspected runtime ${rt.runtimeInstanceId} (incident ${incidentId}): ${runs} run(s) of it move`;
    const event = envelope(
      deps.env,
      "scaleout.requested",
      scaleOutRequestData(
        deps.config,
        tenant,
        requestId,
        dedupeKey,
        { code: REASON_CODE, detail },
        now,
        workerVersion,
        RuntimeInstanceId.parse(rt.runtimeInstanceId),
      ),
      { tenantId: tenant.tenantId, correlationId: requestId, causationId },
    );
    try {
      await deps.store.append(scaleOutRef(tenant.tenantId, requestId), event, { expectedSeq: 0 });
      deps.log.info({ runtime: rt.runtimeInstanceId, requestId, dedupeKey }, "replacement requested at the suspicion");
      return;
    } catch (e) {
      // Admission (or another replica) made this generation just now: read again and re-plan.
      if (!isDroverError(e, "version-conflict")) throw e;
    }
  }
}

/**
 * The key's newest requests, read from the log (never from a fold). Generations are made one after
 * another from 0: they are read side by side in windows that double (0–1, 2–5, 6–13: one or two round
 * trips for what a key nearly always holds, few reads when many replacements start at once); a key
 * with more finds its first free generation by doubling then bisecting on `lastSeq`, and the last
 * WINDOW below it are read.
 */
async function history(deps: RecoveryDeps, tenantId: string, dedupeKey: string, causationId: string) {
  const ref = (g: number) => scaleOutRef(tenantId, scaleOutRequestIdOf(deps.sha256, dedupeKey, g));
  const readAll = (from: number, to: number) =>
    Promise.all(range(from, to).map(async (g) => (await deps.store.read(ref(g))).events));
  let histories: (readonly StoredEvent[])[] = [];
  let hi = -1; // the first free generation, once found
  for (let from = 0, size = 2; hi < 0 && from < 2 * WINDOW - 2; from += size, size *= 2) {
    const got = await readAll(from, from + size);
    const free = got.findIndex((h) => h.length === 0);
    histories = [...histories, ...(free < 0 ? got : got.slice(0, free))];
    if (free >= 0) hi = from + free;
  }
  if (hi < 0) {
    const exists = async (g: number) => (await deps.store.lastSeq(ref(g))) > 0;
    let lo = histories.length - 1; // highest generation known to exist
    hi = 2 * lo + 1; // a generation to check, then one known free
    while (await exists(hi)) [lo, hi] = [hi, hi * 2 + 1];
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (await exists(mid)) lo = mid;
      else hi = mid;
    }
    histories = await readAll(hi - WINDOW, hi);
  }
  const first = hi - histories.length;
  const gens = range(first, hi);
  let ours = false;
  const known: KnownRequest[] = [];
  histories.forEach((events, i) => {
    const requested = events.find((s) => s.event.type === "scaleout.requested");
    if (!requested || requested.event.type !== "scaleout.requested") return;
    if (requested.event.causationId === causationId) ours = true;
    // A redelivered `observed` may follow the end: the first terminal event decides (status never moves back).
    const end = events.find((s) => s.event.type !== "scaleout.requested" && s.event.type !== "scaleout.observed");
    const status = (end ?? events.at(-1)!).event.type.slice("scaleout.".length);
    const fulfilled = events.find((s) => s.event.type === "scaleout.fulfilled");
    const runtimeId =
      fulfilled?.event.type === "scaleout.fulfilled" ? fulfilled.event.data.runtimeInstanceId : undefined;
    const r = runtimeId ? deps.state.runtimes.get(runtimeId) : undefined;
    known.push({
      requestId: scaleOutRequestIdOf(deps.sha256, dedupeKey, gens[i]!),
      status,
      expiresMs: Date.parse(requested.event.data.expiresAt),
      requestedMs: requested.time.getTime(),
      ...(end ? { endedMs: end.time.getTime() } : {}),
      ...(end?.event.type === "scaleout.rejected" ? { rejectedCode: end.event.data.reason.code } : {}),
      ...(runtimeId ? { runtimeGone: !r || !!r.suspected || !!r.fenced || r.retired } : {}),
    });
  });
  return { known, next: hi, ours };
}
