import { appendFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";

/**
 * Opt-in stage tracing for the flood e2e (docs/security.md "Floods"): with DROVER_ADMISSION_TRACE=<file>
 * admission appends JSON lines there — when its follower got each submission of the tenant named by
 * DROVER_ADMISSION_TRACE_TENANT, each pass (start, capacity read, end), each stage of that tenant's
 * placements, event-loop stalls over 15 ms and garbage collections over 5 ms. Off (one test per
 * call site) unless set.
 */
const file = process.env.DROVER_ADMISSION_TRACE;
const tenant = process.env.DROVER_ADMISSION_TRACE_TENANT;
const lines: string[] = [];

export const tracing = file !== undefined && file !== "";
export const traced = (tenantId: string): boolean => tracing && tenantId === tenant;
export function trace(o: Record<string, unknown>): void {
  if (tracing) lines.push(JSON.stringify({ t: Date.now(), ...o }));
}

if (tracing) {
  const flush = () => {
    if (lines.length > 0) appendFileSync(file!, lines.splice(0).join("\n") + "\n");
  };
  setInterval(flush, 500).unref();
  process.on("exit", flush);
  // How late a 5 ms timer fired, and the process's CPU meanwhile: near the lateness, the loop was busy
  // with admission's own work; near zero, the process waited for a core.
  let due = Date.now() + 5;
  let cpu = process.cpuUsage();
  setInterval(() => {
    const late = Date.now() - due;
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    if (late > 15) trace({ ev: "late", ms: late, cpuMs: Math.round((used.user + used.system) / 1000) });
    due = Date.now() + 5;
  }, 5).unref();
  new PerformanceObserver((l) => {
    for (const e of l.getEntries())
      if (e.duration > 5)
        trace({ ev: "gc", ms: Math.round(e.duration), kind: (e as { detail?: { kind?: number } }).detail?.kind });
  }).observe({ entryTypes: ["gc"] });
}

/** A follower delivery: a traced tenant's submission, with its stream time and what the consumer still held. */
export function traceDelivery(
  m: { subject: string; seq: number; info?: { timestampNanos?: number | string; pending?: number } },
  prefix: string,
): void {
  const [agg, tenantId, id, name] = m.subject.slice(prefix.length + 1).split(".");
  if (agg !== "run" || name !== "submitted" || !traced(tenantId ?? "")) return;
  const stream = m.info?.timestampNanos ? Math.floor(Number(m.info.timestampNanos) / 1e6) : undefined;
  trace({ ev: "seen", run: id, seq: m.seq, stream, pending: m.info?.pending });
}

/**
 * A quota-claim batch (platform/tenant-claims.ts) holding a traced tenant's run: its place and size,
 * when admission sent it, when Redis ran it (Redis's clock, the same host's) and when admission had
 * the answer: sent → ran is admission's write and redis-server waking; ran → answered its reply and
 * admission waking to read it.
 */
export function traceClaimBatch(
  runs: readonly (readonly [string, string])[],
  at: { readonly sentAt: number; readonly ranAt: number; readonly answeredAt: number },
): void {
  runs.forEach(([tenantId, run], i) => {
    if (traced(tenantId))
      trace({ ev: "batch", run, pos: i, size: runs.length, sent: at.sentAt, ran: at.ranAt, answered: at.answeredAt });
  });
}
