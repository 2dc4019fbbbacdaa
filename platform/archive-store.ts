import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StoredMsg,
  type StreamConfig,
} from "@nats-io/jetstream";
import { headers as natsHeaders, NoRespondersError, RequestError } from "@nats-io/transport-node";
import type { StreamLayout } from "../streams/index.ts";
import { streamReplicas } from "../streams/replicas.ts";
import { directBatches } from "../streams/stored.ts";

/**
 * The archive of compacted aggregates (docs/retention.md): an immutable stream (deny_delete,
 * deny_purge, no limits) on `<prefix>-archive.>`, where the compactor copies every message of a
 * finished run before it removes the run from the event stream. A copy keeps the event's bytes and
 * says where it came from: its subject is the original with the prefix swapped
 * (`drover.run.t.r.completed` → `drover-archive.run.t.r.completed`), and the headers
 * `Drover-Orig-Seq` / `Drover-Orig-Time` carry its stream sequence and stored time there.
 */
export const archiveStreamOf = (layout: StreamLayout): string => `${layout.eventStream}_ARCHIVE`;
export const archivePrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-archive`;

export const ORIG_SEQ = "Drover-Orig-Seq";
export const ORIG_TIME = "Drover-Orig-Time";

export function archiveStreamConfig(
  layout: StreamLayout,
  replicas = streamReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: archiveStreamOf(layout),
    subjects: [`${archivePrefixOf(layout)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    num_replicas: replicas,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    deny_delete: true,
    deny_purge: true,
    allow_direct: true,
  };
}

/** The archive subject of a live event subject (or filter) of `layout`. */
export function toArchiveSubject(layout: StreamLayout, subject: string): string {
  if (!subject.startsWith(`${layout.eventPrefix}.`)) throw new Error(`${subject} is not an event subject`);
  return `${archivePrefixOf(layout)}${subject.slice(layout.eventPrefix.length)}`;
}

/** The live event subject an archive subject stands for. */
export function fromArchiveSubject(layout: StreamLayout, subject: string): string {
  return `${layout.eventPrefix}${subject.slice(archivePrefixOf(layout).length)}`;
}

/** One archived event: its original subject, sequence and stored time, and its bytes. */
export interface ArchivedMsg {
  readonly origSeq: number;
  readonly subject: string;
  readonly time: string;
  readonly data: Uint8Array;
}

/** A Direct Get nobody answers: the stream does not exist (yet). */
const noStream = (e: unknown): boolean =>
  e instanceof NoRespondersError ||
  (e instanceof RequestError && e.isNoResponders()) ||
  // Direct Get reports it as a status error (503) of its own, by message.
  (e instanceof Error && /no responders/i.test(e.message));

/**
 * Every message of `stream` on `filter`, undecoded, in stream order (batched Direct Get). With
 * `absentIsEmpty`, a stream that does not exist reads as empty (the archive of a deployment set up
 * before it existed).
 */
export async function readRaw(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  absentIsEmpty = false,
): Promise<StoredMsg[]> {
  const out: StoredMsg[] = [];
  try {
    for await (const m of directBatches(jsm, stream, filter)) out.push(m);
  } catch (e) {
    if (!(absentIsEmpty && noStream(e))) throw e;
  }
  return out;
}

/** The archived copies of the live `filter`'s events, in archive order (one per original sequence). */
export async function readArchived(
  jsm: JetStreamManager,
  layout: StreamLayout,
  filter: string,
): Promise<ArchivedMsg[]> {
  const bySeq = new Map<number, ArchivedMsg>();
  for (const m of await readRaw(jsm, archiveStreamOf(layout), toArchiveSubject(layout, filter), true)) {
    const origSeq = Number(m.header.get(ORIG_SEQ));
    if (!Number.isSafeInteger(origSeq) || origSeq <= 0 || bySeq.has(origSeq)) continue;
    const subject = fromArchiveSubject(layout, m.subject);
    bySeq.set(origSeq, { origSeq, subject, time: m.header.get(ORIG_TIME), data: m.data });
  }
  return [...bySeq.values()].sort((a, b) => a.origSeq - b.origSeq);
}

/** Copies one live message into the archive (a duplicate within the dedupe window is a no-op). */
export async function archiveOne(js: JetStreamClient, layout: StreamLayout, m: StoredMsg): Promise<void> {
  const h = natsHeaders();
  h.set(ORIG_SEQ, String(m.seq));
  h.set(ORIG_TIME, m.time.toISOString());
  await js.publish(toArchiveSubject(layout, m.subject), m.data, {
    headers: h,
    msgID: `arc-${m.seq}`,
    expect: { streamName: archiveStreamOf(layout) },
  });
}
