import { EnvelopeBase } from "./envelope.ts";
import { ID_MAX_LENGTH, ID_PATTERN } from "./ids.ts";
import { isPlainJson } from "./plain-json.ts";
import type { DroverEvent } from "./events.ts";

/*
 * A hand-written check of `exec.step-completed`, the event every step appends and most of the
 * stream (W2: ~60% of the events every follower decodes). The compiled zod parse (codec.ts) was about
 * a third of `decodeEvent`'s time on such an event (15 of 45 µs, at load ~18), and decoding 13–18 %
 * of the forensics projector's busy samples in W2 (`--cpu-prof`). The check answers only for a value
 * the full schema accepts and returns unchanged: every key one the schema has, in the schema's order
 * (the order `encodeEvent` writes, and zod's output's), every value of the type, range and pattern
 * zod checks. Anything else (an unknown or missing key, another order, a value zod would refuse or
 * rewrite) answers `undefined`, and the caller parses the event in full: a refusal and its issues
 * stay zod's own, so what goes to the dead-letter record is unchanged.
 * `contracts/codec-step-fast.unit.test.ts` holds it to the full parser's answers.
 */

// zod's own datetime pattern (`z.iso.datetime()`, no offset, any precision), read from the schema
// so the two cannot drift apart.
const DATETIME = (EnvelopeBase.shape.occurredAt as unknown as { _zod: { pattern: RegExp } })._zod.pattern;
const SHA256 = /^[a-f0-9]{64}$/;
const HOST_INCARNATION = /^(pid:\d+:\d+|pod:[a-z0-9-]+)$/;
const SERVICES: ReadonlySet<unknown> = new Set(EnvelopeBase.shape.writer.shape.service.options);

const isId = (v: unknown): boolean =>
  typeof v === "string" && v.length >= 1 && v.length <= ID_MAX_LENGTH && ID_PATTERN.test(v);
const isText = (v: unknown, max: number): boolean => typeof v === "string" && v.length >= 1 && v.length <= max;
const isInt = (v: unknown, min: number): boolean => Number.isSafeInteger(v) && (v as number) >= min;
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * Whether `o`'s keys are some of `order` (the required ones all there), in that order, each value
 * passing its check. Keys absent are checked as `undefined`, so an optional check accepts it.
 */
function fields(o: Record<string, unknown>, order: readonly (readonly [string, (v: unknown) => boolean])[]): boolean {
  const keys = Object.keys(o);
  let k = 0;
  for (const [name, check] of order) {
    if (keys[k] === name) {
      k++;
      // A key present as `undefined` cannot come from JSON; zod would drop or keep it: not ours to say.
      if (o[name] === undefined || !check(o[name])) return false;
    } else if (!check(undefined)) return false;
  }
  return k === keys.length;
}

const optional =
  (check: (v: unknown) => boolean) =>
  (v: unknown): boolean =>
    v === undefined || check(v);

const WRITER = [
  ["service", (v: unknown) => SERVICES.has(v)],
  ["instanceId", (v: unknown) => isText(v, 128)],
  ["runtimeInstanceId", optional(isId)],
  ["hostIncarnation", optional((v) => typeof v === "string" && HOST_INCARNATION.test(v))],
  ["epoch", optional((v) => isInt(v, 0))],
] as const;

const OUTPUT_REF = [
  ["bucket", (v: unknown) => isText(v, 64)],
  ["name", (v: unknown) => isText(v, 512)],
  ["size", (v: unknown) => isInt(v, 0)],
  ["digest", (v: unknown) => typeof v === "string" && SHA256.test(v)],
] as const;

const DATA = [
  ["stepId", isId],
  ["attempt", (v: unknown) => isInt(v, 1)],
  ["output", optional(isPlainJson)],
  ["outputRef", optional((v) => isRecord(v) && fields(v, OUTPUT_REF))],
  ["outputDigest", (v: unknown) => typeof v === "string" && SHA256.test(v)],
  ["durationMs", (v: unknown) => isInt(v, 0)],
  ["cacheKey", optional((v) => typeof v === "string" && SHA256.test(v))],
] as const;

const ENVELOPE = [
  ["eventId", isId],
  ["type", (v: unknown) => v === "exec.step-completed"],
  ["schemaVersion", (v: unknown) => v === 1],
  ["occurredAt", (v: unknown) => typeof v === "string" && DATETIME.test(v)],
  ["tenantId", isId],
  ["correlationId", (v: unknown) => isText(v, 128)],
  ["causationId", (v: unknown) => isText(v, 260)],
  ["writer", (v: unknown) => isRecord(v) && fields(v, WRITER)],
  [
    "data",
    (v: unknown) =>
      isRecord(v) &&
      fields(v, DATA) &&
      // The schema's refinement: exactly one of output and outputRef.
      (v.output === undefined) !== (v.outputRef === undefined),
  ],
] as const;

/**
 * `raw` as the `exec.step-completed` it is, when the full schema would accept it and return it
 * unchanged (same keys, order and values); `undefined` for anything else, including every other
 * event type: parse those in full. Pure.
 */
export function fastStepCompleted(raw: unknown): DroverEvent | undefined {
  if (!isRecord(raw) || raw.type !== "exec.step-completed") return undefined;
  return fields(raw, ENVELOPE) ? (raw as unknown as DroverEvent) : undefined;
}
