import type { StreamLayout } from "./layout.ts";
import { aggregateSubject, type AggregateRef } from "./subjects.ts";

/**
 * Deterministic `Nats-Msg-Id` of the decision "append to this aggregate after `expectedSeq`":
 * `<aggregate subject>:<expectedSeq>`. Two attempts of the same decision carry the same id, so a
 * timed-out publish can be retried; two different aggregates never share one.
 */
export function defaultMsgId(layout: StreamLayout, ref: AggregateRef, expectedSeq: number): string {
  return `${aggregateSubject(layout, ref)}:${expectedSeq}`;
}

/**
 * Msg id of the `index`-th event of a multi-event append whose decision id is `base`: the first
 * event keeps `base` (so a one-event appendAll equals append), later ones get `base#<index>`.
 */
export function nthMsgId(base: string, index: number): string {
  return index === 0 ? base : `${base}#${index}`;
}
