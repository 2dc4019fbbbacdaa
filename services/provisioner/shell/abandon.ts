import { isDroverError, type HostProvider } from "../../../contracts/index.ts";
import { runtimeRef } from "../../../streams/index.ts";
import type { Origin } from "./context.ts";
import type { RuntimeSummary } from "../domain/runtime-roster.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";
import { RuntimeWriter } from "./runtime-writer.ts";

const MAX_CONFLICTS = 8;

/**
 * Cleans up a runtime an earlier (dead or superseded) attempt registered for this request and never
 * published. Our choice is clean-up, not re-drive: the old attempt's host may be half-started by a
 * process we cannot ask, and a RuntimeInstanceId never gets a second host.
 *
 * Order matters: `host-start-failed` (host-start-abandoned) is appended first, conditional on the
 * runtime as read, so the old driver — if it is merely slow — gets a conflict on its next append,
 * sees the runtime ended and can never publish it; then the recorded host incarnation (if any) is
 * killed at its exact boundary; then `retired`. Returns "published" (and touches nothing) when the
 * runtime turns out to have published capacity: the request is fulfilled with it instead.
 *
 * Residual gap: a provisioner that dies in the milliseconds between spawning a process and
 * appending `host-started` (recorded through the strategy's onHostCreated hook, before readiness)
 * leaves a host with no recorded incarnation, which cannot be killed here; its runtime is retired,
 * so it never gets an endpoint or capacity, and it keeps running until the machine's operator (or
 * a graceful stop of that provisioner, which never happened) ends it.
 */
export async function abandonAttempt(
  d: ProvisionerDeps,
  r: RuntimeSummary,
  provider: HostProvider,
  origin: Origin,
): Promise<"abandoned" | "published"> {
  const o: Origin = { ...origin, ...(r.tenantId ? { tenantId: r.tenantId } : {}) };
  let writer = await RuntimeWriter.open(d.store, r.runtimeInstanceId);
  for (let conflicts = 0; ; conflicts++) {
    const s = writer.state;
    if (!s || s.endedBy === "host-start-failed" || s.endedBy === "retired") break;
    if (s.capacityPublished && !s.endedBy) return "published";
    const e = stamp(
      d,
      "runtime.host-start-failed",
      {
        reason: {
          code: "host-start-abandoned",
          detail: `provisioner ${d.instanceId} took request ${origin.correlationId} over; the earlier attempt never proved its host`,
        },
      },
      o,
    );
    try {
      await d.store.append(runtimeRef(r.runtimeInstanceId), e, { expectedSeq: s.lastSeq });
      break;
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
      writer = await RuntimeWriter.open(d.store, r.runtimeInstanceId);
    }
  }
  await writer.refresh();
  const host = writer.state?.hostIncarnation;
  const strategy = d.strategies.get(provider);
  let killNote = "no host incarnation recorded";
  if (host && strategy) {
    const k = await strategy.kill(
      r.runtimeInstanceId,
      {
        hostIncarnation: host,
        ...(writer.state?.pid ? { pid: writer.state.pid } : {}),
        ...(writer.state?.node ? { node: writer.state.node } : {}),
      },
      d.killBudgetMs,
    );
    killNote = k.outcome === "killed" ? `host ${host} gone` : k.detail;
  }
  if (writer.state?.retired) return "abandoned";
  await writer.append([stamp(d, "runtime.retired", { reason: `abandoned start: ${killNote}`.slice(0, 500) }, o)], {
    evenIfEnded: true,
  });
  return "abandoned";
}
