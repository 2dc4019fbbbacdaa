import type { JetStreamClient, JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { decodeEvent } from "../../contracts/index.ts";
import type { StreamLayout } from "../../streams/index.ts";
import { isNotFound } from "../../streams/nats-errors.ts";
import { archiveOne, readArchived, readRaw } from "../archive-store.ts";
import { judge, runAggregates, type Skip } from "./plan.ts";

/** What the compactor works with: its own connection (the `compactor` identity), a clock and the read models' position. */
export interface CompactorDeps {
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  readonly layout: StreamLayout;
  /** The retention window: a finished run stays this long after its terminal event (ms). */
  readonly retentionMs: number;
  readonly now: () => number;
  /** The stream sequence every read model that must keep a run's rows has projected through. */
  readonly projectedThrough: () => Promise<number>;
  /** Runs after the archive is verified, right before the re-check and the purge (tests race it here). */
  readonly beforePurge?: () => Promise<void>;
}

export type CompactOutcome =
  | { readonly kind: "compacted"; readonly messages: number; readonly lastSeq: number; readonly copied: number }
  | { readonly kind: "skipped"; readonly skip: Skip; readonly detail: string };

const skipped = (skip: Skip, detail: string): CompactOutcome => ({ kind: "skipped", skip, detail });

/** The stream sequence of the last message on `filter` from the stream leader (0: none). */
async function lastOn(jsm: JetStreamManager, stream: string, filter: string): Promise<number> {
  try {
    return (await jsm.streams.getMessage(stream, { last_by_subj: filter }))?.seq ?? 0;
  } catch (e) {
    if (isNotFound(e)) return 0;
    throw e;
  }
}

/**
 * Removes one finished run from the event stream after copying it to the archive
 * (docs/retention.md "How a run is removed"). In order: the stream is compactable; the run's last
 * event is terminal, older than the retention window, and projected by the read models; every
 * message of the run's aggregates is in the archive (each original sequence, verified by reading
 * the archive back); the last sequence of each aggregate is still what was archived (re-read from
 * the stream leader); then each aggregate is purged up to that sequence only (`seq: last + 1`), so
 * an event appended after the re-check is never removed. Safe to run again after a crash at any step.
 */
export async function compactRun(d: CompactorDeps, tenantId: string, sharedRunId: string): Promise<CompactOutcome> {
  const stream = d.layout.eventStream;
  if ((await d.jsm.streams.info(stream)).config.deny_purge)
    return skipped("immutable-stream", `${stream} was created with deny_purge (DROVER_EVENT_COMPACTION off)`);
  const runFilter = `${d.layout.eventPrefix}.run.${tenantId}.${sharedRunId}.>`;
  const runMsgs = await readRaw(d.jsm, stream, runFilter);
  const last = runMsgs.at(-1);
  if (!last) return skipped("no-events", `no events of run ${sharedRunId} of ${tenantId} in ${stream}`);
  const runEvents = runMsgs.map((m) => decodeEvent(m.data, { seq: m.seq, subject: m.subject }));
  const filters = runAggregates(d.layout, tenantId, sharedRunId, runEvents);
  const live = new Map<string, StoredMsg[]>();
  for (const f of filters) live.set(f, f === runFilter ? runMsgs : await readRaw(d.jsm, stream, f));
  const lastSeq = Math.max(...[...live.values()].flat().map((m) => m.seq));
  const verdict = judge({
    lastType: runEvents.at(-1)!.type,
    endedAtMs: last.time.getTime(),
    nowMs: d.now(),
    retentionMs: d.retentionMs,
    lastSeq,
    projectedThrough: await d.projectedThrough(),
  });
  if (verdict) return skipped(verdict.skip, verdict.detail);

  let copied = 0;
  for (const [f, msgs] of live) {
    const have = new Set((await readArchived(d.jsm, d.layout, f)).map((a) => a.origSeq));
    for (const m of msgs.filter((x) => !have.has(x.seq))) {
      await archiveOne(d.js, d.layout, m);
      copied += 1;
    }
    const after = new Set((await readArchived(d.jsm, d.layout, f)).map((a) => a.origSeq));
    const missing = msgs.filter((m) => !after.has(m.seq)).map((m) => m.seq);
    if (missing.length > 0) return skipped("archive-incomplete", `${f}: sequences ${missing.join(",")} not archived`);
  }
  await d.beforePurge?.();
  for (const [f, msgs] of live) {
    const now = await lastOn(d.jsm, stream, f);
    const then = msgs.at(-1)?.seq ?? 0;
    if (now !== then) return skipped("changed", `${f}: last sequence ${now}, archived through ${then}`);
  }
  let messages = 0;
  for (const [f, msgs] of live) {
    const end = msgs.at(-1)?.seq;
    if (end === undefined) continue;
    messages += (await d.jsm.streams.purge(stream, { filter: f, seq: end + 1 })).purged;
  }
  return { kind: "compacted", messages, lastSeq, copied };
}
