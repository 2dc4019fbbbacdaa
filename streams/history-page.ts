import { isSubjectSafeId } from "../contracts/index.ts";
import type { StreamLayout } from "./layout.ts";

/**
 * The history protocol between a runtime and the history responder (history-responder.ts,
 * docs/nats-identities.md "Runtimes read through the history responder"). A runtime asks for one
 * aggregate's stored messages from a sequence on; the request SUBJECT names the aggregate
 * (`<prefix>-read.<exec|run>.<tenant>.<id>`), so the runtime's NATS rights decide which aggregates
 * it may ask about. The body only says where to start and how many. The answer is one page, at
 * most the server's max payload: a JSON header with each message's metadata and size, followed by
 * the messages' raw bytes. Pure: no transport.
 */

/** Aggregates a runtime reads the history of. */
export const HISTORY_AGGREGATES = ["exec", "run"] as const;
export type HistoryAggregate = (typeof HISTORY_AGGREGATES)[number];

/** First subject tokens of history requests: `drover-read` (`<tag>.drover-read` on a tagged layout). */
export const historyPrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-read`;

export interface HistoryTarget {
  readonly aggregate: HistoryAggregate;
  readonly tenantId: string;
  readonly id: string;
}

/** The request subject for an aggregate filter `<events>.<exec|run>.<tenant>.<id>.>`; undefined for any other filter. */
export function historySubjectOf(layout: StreamLayout, filter: string): string | undefined {
  const head = `${layout.eventPrefix}.`;
  if (!filter.startsWith(head) || !filter.endsWith(".>")) return undefined;
  const t = filter.slice(head.length, -2).split(".");
  const target = t.length === 3 ? toTarget(t[0]!, t[1]!, t[2]!) : undefined;
  return target && `${historyPrefixOf(layout)}.${target.aggregate}.${target.tenantId}.${target.id}`;
}

/** The aggregate a request subject names, or undefined when the subject is not a well-formed request. */
export function historyTargetOf(layout: StreamLayout, subject: string): HistoryTarget | undefined {
  const head = `${historyPrefixOf(layout)}.`;
  if (!subject.startsWith(head)) return undefined;
  const t = subject.slice(head.length).split(".");
  return t.length === 3 ? toTarget(t[0]!, t[1]!, t[2]!) : undefined;
}

const toTarget = (aggregate: string, tenantId: string, id: string): HistoryTarget | undefined =>
  (HISTORY_AGGREGATES as readonly string[]).includes(aggregate) && isSubjectSafeId(tenantId) && isSubjectSafeId(id)
    ? { aggregate: aggregate as HistoryAggregate, tenantId, id }
    : undefined;

/** The event-stream filter a request reads: exactly the aggregate its subject names. */
export const historyFilterOf = (layout: StreamLayout, t: HistoryTarget): string =>
  `${layout.eventPrefix}.${t.aggregate}.${t.tenantId}.${t.id}.>`;

export interface HistoryRequest {
  /** First stream sequence wanted (≥ 1). */
  readonly from: number;
  /** At most this many messages (default: as many as fit one page). */
  readonly max?: number;
}

export function parseHistoryRequest(body: Uint8Array): HistoryRequest | undefined {
  try {
    const r = JSON.parse(new TextDecoder().decode(body)) as Partial<HistoryRequest>;
    const okMax = r.max === undefined || (Number.isSafeInteger(r.max) && r.max >= 1);
    return Number.isSafeInteger(r.from) && (r.from as number) >= 1 && okMax
      ? { from: r.from as number, ...(r.max === undefined ? {} : { max: r.max }) }
      : undefined;
  } catch {
    return undefined;
  }
}

/** One stored message as a page carries it. */
export interface PagedMsg {
  readonly seq: number;
  readonly subject: string;
  /** The stream's timestamp (ISO). */
  readonly time: string;
  readonly data: Uint8Array;
}

export interface HistoryPage {
  readonly msgs: readonly PagedMsg[];
  /** More messages on the aggregate after the last one here: ask again from its sequence + 1. */
  readonly more: boolean;
}

/** A refusal or failure, with a stable code: `bad-request`, `too-large` or `unavailable`. */
export interface HistoryError {
  readonly code: "bad-request" | "too-large" | "unavailable";
  readonly message: string;
}

interface Header {
  readonly msgs?: readonly { s: number; j: string; t: string; n: number }[];
  readonly more?: boolean;
  readonly error?: HistoryError;
}

const enc = new TextEncoder();

/** Bytes of a page with `msgs` (to decide what fits under the max payload). */
export const pageSize = (msgs: readonly PagedMsg[], more = true): number => encodePage({ msgs, more }).length;

export function encodePage(p: HistoryPage | { error: HistoryError }): Uint8Array {
  const header: Header =
    "error" in p
      ? { error: p.error }
      : { msgs: p.msgs.map((m) => ({ s: m.seq, j: m.subject, t: m.time, n: m.data.length })), more: p.more };
  const h = enc.encode(JSON.stringify(header));
  const body = "error" in p ? [] : p.msgs.map((m) => m.data);
  const out = new Uint8Array(4 + h.length + body.reduce((n, d) => n + d.length, 0));
  new DataView(out.buffer).setUint32(0, h.length);
  out.set(h, 4);
  let at = 4 + h.length;
  for (const d of body) {
    out.set(d, at);
    at += d.length;
  }
  return out;
}

/** Decodes a page; throws on a malformed one (a responder of another version, a truncated message). */
export function decodePage(raw: Uint8Array): HistoryPage | { error: HistoryError } {
  if (raw.length < 4) throw new Error(`history page of ${raw.length} bytes has no header`);
  const n = new DataView(raw.buffer, raw.byteOffset, raw.byteLength).getUint32(0);
  if (4 + n > raw.length) throw new Error(`history page header of ${n} bytes exceeds the page`);
  const h = JSON.parse(new TextDecoder().decode(raw.subarray(4, 4 + n))) as Header;
  if (h.error) return { error: h.error };
  let at = 4 + n;
  const msgs = (h.msgs ?? []).map((m) => {
    const data = raw.slice(at, at + m.n);
    if (data.length !== m.n) throw new Error(`history page truncated at sequence ${m.s}`);
    at += m.n;
    return { seq: m.s, subject: m.j, time: m.t, data };
  });
  if (at !== raw.length) throw new Error(`history page has ${raw.length - at} bytes after its messages`);
  return { msgs, more: h.more === true };
}
