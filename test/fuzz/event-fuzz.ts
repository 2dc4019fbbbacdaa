import { createHash } from "node:crypto";
import fc from "fast-check";
import { foldExecution, isExecEvent } from "../../aggregates/execution.ts";
import { evolveCapacity, type RuntimeEvent } from "../../aggregates/capacity/fold.ts";
import { routability } from "../../aggregates/capacity/routability.ts";
import { foldRun } from "../../aggregates/run.ts";
import { validateRunLog } from "../../aggregates/replay-validation.ts";
import {
  decodeEvent,
  decodeJson,
  Heartbeat,
  isDroverError,
  RuntimeInstanceId,
  type DroverEvent,
} from "../../contracts/index.ts";
import { RunIndex } from "../../services/admission/index.ts";
import { runView } from "../../services/api/index.ts";
import { describe as describeEvent, forensicsRow, ledgerRows } from "../../services/forensics/index.ts";
import { emptyRoster, evolveRoster } from "../../services/provisioner/index.ts";
import { RecoveryState } from "../../services/recovery/index.ts";
import { ScheduleBook } from "../../services/scheduler/index.ts";
import { planSchedule } from "../../aggregates/schedule-plan.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import type { StoredEvent } from "../../streams/index.ts";
import { allExampleEvents } from "../support/example-events.ts";

/**
 * Fuzzing of event decoding and the folds every service runs over decoded events (pure; no
 * transport). A case is a sequence of messages on drover subjects: catalogue examples, mutated
 * (a field replaced by arbitrary JSON, deleted, added; the type swapped for another's; bytes
 * flipped; truncated) or random bytes, plus mutated heartbeats. Each message goes through what a
 * follower does with it — `decodeEvent`, recovery's and admission's indexes (`apply`), the
 * capacity fold, the provisioner's roster, forensics' describe/ledger rows — and each case ends
 * with the aggregate folds, the API's run view and replay validation over what decoded.
 *
 * The property: decoding fails only with `contract-violation`; nothing else throws, ever.
 */
const PREFIX = "fz.drover";
const examples = allExampleEvents();
const enc = new TextEncoder();
const exampleBeat = {
  type: "heartbeat",
  runtimeInstanceId: "rt-tenant-a-0001",
  hostIncarnation: "pid:4242:987654",
  beat: 1,
  at: "2026-01-02T03:04:05.678Z",
  workers: 2,
  activeWorkers: 1,
  availableWorkers: 1,
  queuedRuns: 0,
  runningRuns: 1,
  availableSlots: 9,
  paused: false,
  draining: false,
};
/** Ids of the examples and one other each, so folds see the same aggregates again and again. */
const IDS = {
  tenant: ["tenant-a", "tenant-b"],
  run: ["run-0001", "run-0002"],
  exec: ["ex-0001", "ex-0002"],
  runtime: ["rt-tenant-a-0001", "rt-tenant-a-0002"],
  scaleout: ["so-0001", "so-0002"],
  forensics: ["fx-0001", "fx-0002"],
  schedule: ["sch-nightly", "sch-0002"],
  flowkey: ["fk-0001", "fk-0002"],
  quota: ["rt-tenant-a", "rt-tenant-b"],
  worker: ["deploys", "deploys"],
} as const;

const mutation = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "none" as const }) },
  fc.record({ kind: fc.constant("replace" as const), inData: fc.boolean(), key: fc.nat(), value: fc.jsonValue() }),
  fc.record({ kind: fc.constant("delete" as const), inData: fc.boolean(), key: fc.nat() }),
  fc.record({ kind: fc.constant("add" as const), key: fc.string({ maxLength: 8 }), value: fc.jsonValue() }),
  fc.record({ kind: fc.constant("retype" as const), to: fc.nat() }),
  fc.record({
    kind: fc.constant("bytes" as const),
    flips: fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("random" as const), bytes: fc.uint8Array({ maxLength: 200 }) }),
);
const message = fc.record({
  heartbeat: fc.nat(5).map((n) => n === 0),
  example: fc.nat(examples.length - 1),
  mutation,
  a: fc.nat(1),
  b: fc.nat(1),
});
export type FuzzMessage = typeof message extends fc.Arbitrary<infer T> ? T : never;
export const fuzzCase = fc.array(message, { minLength: 1, maxLength: 40 });

function mutate(value: Record<string, unknown>, m: FuzzMessage["mutation"]): Uint8Array {
  const v = structuredClone(value);
  const target = (inData: boolean) =>
    (inData && typeof v.data === "object" && v.data !== null ? v.data : v) as Record<string, unknown>;
  const keyOf = (o: Record<string, unknown>, k: number) => Object.keys(o)[k % Math.max(1, Object.keys(o).length)];
  switch (m.kind) {
    case "replace": {
      const o = target(m.inData);
      o[keyOf(o, m.key) ?? "x"] = m.value;
      break;
    }
    case "delete": {
      const o = target(m.inData);
      delete o[keyOf(o, m.key) ?? "x"];
      break;
    }
    case "add":
      v[m.key] = m.value;
      break;
    case "retype":
      v.type = examples[m.to % examples.length]!.type;
      break;
    case "random":
      return m.bytes;
    default:
      break;
  }
  const bytes = enc.encode(JSON.stringify(v));
  if (m.kind === "bytes") for (const f of m.flips) if (bytes.length) bytes[f.at % bytes.length] = f.byte;
  if (m.kind === "truncate") return bytes.slice(0, m.at % (bytes.length + 1));
  return bytes;
}

function subjectOf(e: DroverEvent, a: number, b: number): string {
  const agg = e.type.split(".")[0] as keyof typeof IDS;
  const name = e.type.split(".")[1];
  return agg === "runtime"
    ? `${PREFIX}.runtime.${IDS.runtime[a]}.${name}`
    : `${PREFIX}.${agg}.${IDS.tenant[a]}.${IDS[agg][b]}.${name}`;
}

/** Runs one case; throws (with the message and step) on any violation of the property. */
export function runCase(messages: readonly FuzzMessage[]): { decoded: number; rejected: number } {
  const noop = () => undefined;
  const recovery = new RecoveryState(PREFIX, noop);
  const index = new RunIndex(PREFIX, noop, { now: () => new Date(1_000_000) });
  const schedules = new ScheduleBook(noop);
  const capacity = new Map<string, CapacityDescriptor>();
  let roster = emptyRoster();
  const stored: StoredEvent[] = [];
  let rejected = 0;
  for (const [i, m] of messages.entries()) {
    const seq = i + 1;
    const info = { timestampNanos: (1_000_000 + seq) * 1e6 } as never;
    if (m.heartbeat) {
      const data = mutate(exampleBeat, m.mutation);
      const subject = `${PREFIX}-hb.${IDS.runtime[m.a]}`;
      recovery.applyBeat({ subject, seq, data }, 1_000_000 + seq);
      try {
        const beat = decodeJson(Heartbeat, data, "heartbeat", { seq });
        const d = evolveCapacity(capacity.get(beat.runtimeInstanceId), { kind: "heartbeat", beat });
        capacity.set(beat.runtimeInstanceId, d);
        routability(d, { now: 1_000_000 + seq, staleMs: 750, reservedSlots: 0 });
      } catch (e) {
        if (!isDroverError(e, "contract-violation")) throw e;
        rejected++;
      }
      continue;
    }
    const example = examples[m.example]!;
    const subject = subjectOf(example, m.a, m.b);
    const data = mutate(example as unknown as Record<string, unknown>, m.mutation);
    const msg = { subject, seq, data, info };
    recovery.apply(msg);
    index.apply(msg);
    schedules.apply(msg);
    let event: DroverEvent;
    try {
      event = decodeEvent(data, { seq, subject });
    } catch (e) {
      if (!isDroverError(e, "contract-violation")) throw e;
      rejected++;
      continue;
    }
    const tokens = subject.slice(PREFIX.length + 1).split(".");
    const aggregateId = (tokens[0] === "runtime" ? tokens[1] : tokens[2])!;
    const fact = { stream: "FZ", seq, storedAt: new Date(1_000_000 + seq).toISOString(), aggregateId, event };
    describeEvent(event, aggregateId);
    ledgerRows(fact, tokens[0] === "runtime" ? undefined : tokens[1]);
    forensicsRow(fact);
    if (event.type.startsWith("runtime.")) {
      const id = RuntimeInstanceId.parse(aggregateId);
      const input = { kind: "event" as const, seq, runtimeInstanceId: id, event: event as RuntimeEvent };
      capacity.set(id, evolveCapacity(capacity.get(id), input));
      roster = evolveRoster(roster, seq, id, event as RuntimeEvent);
    }
    stored.push({ seq, subject, time: new Date(1_000_000 + seq), event } as StoredEvent);
  }
  for (const runId of IDS.run)
    for (const tenant of IDS.tenant) {
      const of = stored.filter((s) => s.subject.startsWith(`${PREFIX}.run.${tenant}.${runId}.`));
      runView(foldRun(of));
      validateRunLog(runId, stored, { digest: (x) => createHash("sha256").update(x).digest("hex") });
    }
  for (const e of schedules.entries.values()) planSchedule(e.state, 1_000_000 + stored.length, [...e.open]);
  for (const execId of IDS.exec)
    foldExecution(stored.filter((s) => s.subject.includes(`.${execId}.`) && isExecEvent(s.event)));
  return { decoded: stored.length, rejected };
}
