import type { JetStreamManager } from "@nats-io/jetstream";
import type { StreamLayout } from "../../streams/index.ts";
import { readRaw } from "../archive-store.ts";
import { TERMINAL_RUN_NAMES } from "./plan.ts";

/** A run whose terminal event is older than the cut-off: worth asking `compactRun` about. */
export interface Candidate {
  readonly tenantId: string;
  readonly sharedRunId: string;
}

/**
 * The runs with a terminal event stored before `cutoffMs` (the server's time), oldest first,
 * optionally of one tenant. Only a pre-selection: `compactRun` re-reads each run and decides. The
 * scan reads the terminal events still in the stream, so it shrinks as runs are compacted.
 */
export async function candidates(
  jsm: JetStreamManager,
  layout: StreamLayout,
  cutoffMs: number,
  tenantId = "*",
): Promise<Candidate[]> {
  const found = new Map<string, Candidate & { seq: number }>();
  for (const name of TERMINAL_RUN_NAMES)
    for (const m of await readRaw(jsm, layout.eventStream, `${layout.eventPrefix}.run.${tenantId}.*.${name}`)) {
      if (m.time.getTime() >= cutoffMs) continue;
      const [tenant, run] = m.subject.slice(layout.eventPrefix.length + ".run.".length).split(".") as [string, string];
      found.set(`${tenant}/${run}`, { tenantId: tenant, sharedRunId: run, seq: m.seq });
    }
  return [...found.values()]
    .sort((a, b) => a.seq - b.seq)
    .map(({ tenantId: t, sharedRunId: r }) => ({ tenantId: t, sharedRunId: r }));
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30d`, `12h`, `90m`, `45s`, `500ms` → ms; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  return m ? Number(m[1]) * UNITS[m[2]!]! : undefined;
}
