import { EVENT_TYPES, type EventType } from "../../contracts/index.ts";
import { eventSubject, heartbeatSubject, type AggregateRef, type StreamLayout } from "../../streams/index.ts";
import { exampleEvent } from "./example-events.ts";

/**
 * Garbage for every subject class drover's services consume, built from the catalogue
 * (`EVENT_TYPES`), so a new event type is poisoned without editing the chaos test. Each message is
 * something no correct writer produces: not JSON, an unknown type, a known type with wrong fields,
 * a known type with an extra field, a newer schema version, a valid event of another aggregate, or a
 * payload near the server's 1 MB cap.
 */
export interface PoisonMessage {
  readonly subject: string;
  readonly variant: string;
  readonly bytes: Uint8Array;
}

/** Near nats-server's default max_payload (1 MiB) with room for the envelope. */
const HUGE = 900_000;
const enc = new TextEncoder();
const json = (v: unknown) => enc.encode(JSON.stringify(v));

/** The event's example with its tenant set to the subject's (a plausible writer's mistake, not an impossible one). */
function example(type: EventType, ref: AggregateRef): Record<string, unknown> {
  const e = structuredClone(exampleEvent(type)) as Record<string, unknown>;
  if (ref.aggregate !== "runtime") e.tenantId = ref.tenantId;
  return e;
}

/** A valid event of another aggregate (valid JSON, valid schema, wrong subject): what a producer with a subject bug writes. */
function foreign(type: EventType): unknown {
  const other = EVENT_TYPES.find((t) => t.split(".")[0] !== type.split(".")[0])!;
  return exampleEvent(other);
}

/** Every variant of garbage for one event type on one aggregate instance. */
export function poisonEvent(layout: StreamLayout, ref: AggregateRef, type: EventType, huge = false): PoisonMessage[] {
  const subject = eventSubject(layout, ref, type);
  const base = example(type, ref);
  const out: PoisonMessage[] = [
    { subject, variant: "not-json", bytes: enc.encode(`{"type":"${type}", garbage`) },
    { subject, variant: "unknown-type", bytes: json({ ...base, type: `${type.split(".")[0]}.from-the-future` }) },
    { subject, variant: "wrong-fields", bytes: json({ ...base, data: { bogus: [1, 2, 3] }, writer: "nobody" }) },
    { subject, variant: "extra-field", bytes: json({ ...base, data: { ...(base.data as object), added: true } }) },
    { subject, variant: "newer-schema", bytes: json({ ...base, schemaVersion: 99 }) },
    { subject, variant: "other-aggregate", bytes: json(foreign(type)) },
    { subject, variant: "json-null", bytes: enc.encode("null") },
    { subject, variant: "empty", bytes: new Uint8Array(0) },
  ];
  if (huge) out.push({ subject, variant: "huge", bytes: json({ ...base, padding: "x".repeat(HUGE) }) });
  return out;
}

/** Garbage for every event type of `ref`'s aggregate; the first type also gets the huge payload. */
export function poisonAggregate(layout: StreamLayout, ref: AggregateRef): PoisonMessage[] {
  const types = EVENT_TYPES.filter((t) => t.startsWith(`${ref.aggregate}.`));
  return types.flatMap((t, i) => poisonEvent(layout, ref, t, i === 0));
}

/** Garbage heartbeats on one runtime's heartbeat subject. */
export function poisonHeartbeats(layout: StreamLayout, runtimeInstanceId: string): PoisonMessage[] {
  const subject = heartbeatSubject(layout, runtimeInstanceId);
  const beat = {
    type: "heartbeat",
    runtimeInstanceId,
    hostIncarnation: "pid:1:1",
    beat: 1,
    at: new Date(0).toISOString(),
    workers: 1,
    activeWorkers: 0,
    availableWorkers: 1,
    queuedRuns: 0,
    runningRuns: 0,
    availableSlots: 1,
    paused: false,
    draining: false,
  };
  return [
    { subject, variant: "not-json", bytes: enc.encode("<<heartbeat>>") },
    { subject, variant: "unknown-type", bytes: json({ ...beat, type: "heartbeat-v2" }) },
    { subject, variant: "wrong-fields", bytes: json({ ...beat, beat: -1, workers: "many" }) },
    { subject, variant: "extra-field", bytes: json({ ...beat, cpu: 0.5 }) },
    { subject, variant: "json-array", bytes: json([beat]) },
    { subject, variant: "huge", bytes: json({ ...beat, padding: "x".repeat(HUGE) }) },
  ];
}

/** Request bodies for a control-plane request subject (its handlers must ignore or refuse them, never die). */
export function poisonRequests(subject: string): PoisonMessage[] {
  return [
    { subject, variant: "not-json", bytes: enc.encode("rebuild please }") },
    { subject, variant: "wrong-fields", bytes: json({ fromSeq: "zero", controlPlaneId: 7 }) },
    { subject, variant: "huge", bytes: json({ padding: "x".repeat(HUGE) }) },
  ];
}
