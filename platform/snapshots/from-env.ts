import type { NatsConnection } from "@nats-io/transport-node";
import { Counter, Gauge, type Registry } from "prom-client";
import type { StreamLayout } from "../../streams/index.ts";
import { snapshotPolicyOf } from "./envelope.ts";
import type { SnapshotOptions } from "./options.ts";
import { createSnapshotStore } from "./store.ts";

/**
 * A service's snapshots as its main wires them: its own key in the snapshot stream, the write
 * policy from `DROVER_SNAPSHOT_EVERY_EVENTS` / `DROVER_SNAPSHOT_EVERY_MS` (0 events: read only,
 * never written), and two metrics: `drover_snapshot_rejected_total{reason}` (a snapshot ignored)
 * and `drover_snapshot_seq` (the sequence the last written snapshot covers).
 */
export function snapshotsFromEnv(
  nc: NatsConnection,
  layout: StreamLayout,
  owner: string,
  registry: Registry,
  env: Readonly<Record<string, string | undefined>>,
): SnapshotOptions {
  const rejected = new Counter({
    name: "drover_snapshot_rejected_total",
    help: "snapshots ignored at start (the stream was folded from sequence 1 instead), by reason",
    labelNames: ["reason"],
    registers: [registry],
  });
  const written = new Gauge({
    name: "drover_snapshot_seq",
    help: "the stream sequence the last snapshot this process wrote covers",
    registers: [registry],
  });
  const policy = snapshotPolicyOf(env);
  return {
    store: createSnapshotStore(nc, layout, owner),
    ...(policy ? { policy } : {}),
    onRejected: (reason) => rejected.inc({ reason }),
    onWritten: (seq) => written.set(seq),
  };
}

/** `DROVER_MAX_TERMINAL_RUNS`: terminal runs kept in memory by admission, recovery and the api's open-runs view (default 10,000; `0` keeps none, `all` keeps every one). */
export const maxTerminalRunsOf = (env: Readonly<Record<string, string | undefined>>): number | undefined =>
  boundOf(env, "DROVER_MAX_TERMINAL_RUNS", "10000");

/**
 * `DROVER_MAX_ENDED_RUNTIMES`: ended runtimes (fenced, retired, host gone) kept in memory by the
 * provisioner's roster, recovery and capacity's cache (default 1,000; `0` keeps none, `all` keeps every one).
 */
export const maxEndedRuntimesOf = (env: Readonly<Record<string, string | undefined>>): number | undefined =>
  boundOf(env, "DROVER_MAX_ENDED_RUNTIMES", "1000");

/** `DROVER_MAX_FINISHED_FORENSICS`: completed forensics records recovery keeps in memory (default 10,000; `all`: every one). */
export const maxFinishedForensicsOf = (env: Readonly<Record<string, string | undefined>>): number | undefined =>
  boundOf(env, "DROVER_MAX_FINISHED_FORENSICS", "10000");

function boundOf(env: Readonly<Record<string, string | undefined>>, name: string, dflt: string): number | undefined {
  const v = env[name] ?? dflt;
  if (v === "all") return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a count or "all", not ${v}`);
  return n;
}
