import { z } from "zod";
import { DroverError } from "./errors.ts";
import { EVENT_DEFINITIONS, type DroverEvent } from "./events.ts";
import type { ExecStepCompleted } from "./events-exec.ts";
import { RunSubmitted, type RunCompleted } from "./events-run.ts";
import { isCheckedDag, type DagMemo } from "./checked-dag.ts";
import { submittedFast } from "./codec-submitted.ts";
import type { DagDefinition } from "./dag.ts";
import { isPlainJson } from "./plain-json.ts";
import { memo } from "./memo.ts";

/**
 * The only place bytes become objects and back. Every decode validates with zod; a value that does
 * not parse raises `contract-violation` naming the schema issues (and the stream sequence when the
 * caller passes it), so nothing invalid is appended and nothing invalid is skipped silently.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function contractViolation(
  what: string,
  issues: readonly z.core.$ZodIssue[] | string,
  at?: { seq?: number; subject?: string },
): DroverError {
  const list =
    typeof issues === "string" ? [issues] : issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
  const where = at?.seq !== undefined ? ` at stream sequence ${at.seq}` : "";
  return new DroverError("contract-violation", `${what} is invalid${where}: ${list.slice(0, 5).join("; ")}`, {
    details: { issues: list, ...(at ?? {}) },
  });
}

/** Validates `value` against `schema` and returns the parsed (defaulted) value. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what = "value"): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw contractViolation(what, r.error.issues);
  return r.data;
}

export function encodeJson<S extends z.ZodType>(schema: S, value: z.input<S>, what = "message"): Uint8Array {
  return encoder.encode(JSON.stringify(validate(schema, value, what)));
}

export function decodeJson<S extends z.ZodType>(
  schema: S,
  bytes: Uint8Array,
  what = "message",
  at?: { seq?: number; subject?: string },
): z.output<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw contractViolation(what, `not JSON (${(e as Error).message})`, at);
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw contractViolation(what, r.error.issues, at);
  return r.data;
}

/** What the codec needs of a schema: zod's `safeParse`. */
export type EventParser = Pick<z.ZodType, "safeParse">;

/**
 * Each event schema as zod compiles it (`z.compile`, made on first use): a generated fast path that
 * falls back to zod's runtime parser whenever it does not accept the value, so a refusal is the
 * runtime parser's own, with the same issues; parts it cannot model (recursive JSON values,
 * refinements) run on the runtime parser inside it. Every event is checked on every append and
 * every decode, by every service: the runtime's parse of a small event was ~15× slower (issue 15).
 * `contracts/codec-compiled.unit.test.ts` holds the two parsers to the same answers.
 */
const compiled = new Map<string, EventParser>();
export function compiledEventSchema(type: string): EventParser | undefined {
  let schema = compiled.get(type);
  if (schema) return schema;
  const def = EVENT_DEFINITIONS.get(type);
  if (!def) return undefined;
  const full = z.compile(def.schema as z.ZodType);
  schema = PLAIN_OUTPUT.has(type) ? withPlainOutput(def.schema as unknown as WithOutputSchema, full) : full;
  compiled.set(type, schema);
  return schema;
}

/**
 * Compiles the schemas of `types` now, each run once on a value it refuses at its first check: what
 * their first use would otherwise compile (~100–240 ms for the exec and run events in a fresh
 * process at load 15, then ~6 ms). For a pooled runtime, before it is bound (services/runtime/shell/warm-up.ts).
 * Returns how many of `types` are events of the catalogue.
 */
export function precompileEventSchemas(types: readonly string[]): number {
  let n = 0;
  for (const t of types) {
    const schema = compiledEventSchema(t);
    if (!schema) continue;
    schema.safeParse(undefined);
    n++;
  }
  return n;
}

/** The events whose `data.output` is a `z.json()` (`StepOutput`): each step's output, and the run's. */
const PLAIN_OUTPUT: ReadonlySet<string> = new Set(["exec.step-completed", "run.completed"]);
type WithOutputSchema = typeof ExecStepCompleted.schema | typeof RunCompleted.schema;

/**
 * `exec.step-completed`, the event every step appends, and `run.completed`, which every follower of a
 * run's end decodes (admission, recovery, the API's feeds, forensics): their `output` is a `z.json()`,
 * a recursive union zod's compiler leaves to the runtime parser (~10 µs of a ~11 µs step parse; a
 * `run.completed` took ~3.5× a `run.started`, with or without an output). The event is parsed
 * with `output` as `z.unknown()` (fully compiled) and the output checked by `isPlainJson`, which
 * answers true only for values `z.json()` accepts unchanged; anything else, and any refusal, goes to
 * the full parser, so the answer is always the full schema's.
 */
function withPlainOutput(schema: WithOutputSchema, full: EventParser): EventParser {
  // Typed as plain objects: safeExtend's types only take a narrower field, and `unknown` is wider.
  const data = schema.shape.data as unknown as z.ZodObject;
  const envelope = schema as unknown as z.ZodObject;
  const shape = z.compile(envelope.safeExtend({ data: data.safeExtend({ output: z.unknown().optional() }) }));
  return {
    safeParse: ((value: unknown) => {
      const r = shape.safeParse(value);
      const output = r.success ? (r.data.data as { output?: unknown }).output : undefined;
      return r.success && (output === undefined || isPlainJson(output)) ? r : full.safeParse(value);
    }) as EventParser["safeParse"],
  };
}

/** Validates an event against the schema its `type` names; unknown types are violations. */
export function parseEvent(raw: unknown, at?: { seq?: number; subject?: string }): DroverEvent {
  const type = (raw as { type?: unknown } | null)?.type;
  const schema = typeof type === "string" ? compiledEventSchema(type) : undefined;
  if (!schema) throw contractViolation("event", `unknown event type ${JSON.stringify(type)}`, at);
  const r = schema.safeParse(raw);
  if (!r.success) throw contractViolation(`event ${type}`, r.error.issues, at);
  return r.data as DroverEvent;
}

export function encodeEvent(event: DroverEvent): Uint8Array {
  if (event.type === "run.submitted" && isCheckedDag(event.data.dag)) {
    // Its DAG was parsed by `DagDefinition` and frozen in this process (checked-dag.ts): the rest is
    // checked here, on the compiled path when it takes the event, else by the full schema (for its issues).
    const fast = submittedFast(event, (dag) => (isCheckedDag(dag) ? (dag as DagDefinition) : undefined));
    if (fast) return encoder.encode(JSON.stringify(fast));
    const r = checkedDagSubmitted().safeParse(event);
    if (!r.success) throw contractViolation("event run.submitted", r.error.issues);
    return encoder.encode(JSON.stringify(r.data));
  }
  return encoder.encode(JSON.stringify(parseEvent(event)));
}

/**
 * `run.submitted` whose DAG must be one `parseDag` checked (the same object), everything else as `RunSubmitted`;
 * built and compiled on first use (memo.ts), as the event schemas are (see `compiledEventSchema`).
 */
const checkedDagSubmitted = memo(() =>
  z.compile(
    RunSubmitted.schema.extend({
      data: RunSubmitted.schema.shape.data.extend({
        dag: z.custom<unknown>(isCheckedDag, "not a DAG checked by DagDefinition in this process"),
      }),
    }),
  ),
);

/**
 * Decodes a stored event. With `at.subject`, the subject must name the event's aggregate and event
 * (`…<aggregate>.<tenant>.<id>.<event>`, `…runtime.<id>.<event>`): every fold dispatches on the
 * subject's aggregate and then on the type, so a valid event of another aggregate on a run subject
 * (a buggy producer) must be refused here, not reach a fold that cannot handle it.
 * With `dags`, a `run.submitted`'s DAG is checked through that memo (checked-dag.ts `DagMemo`): the
 * same verdict and value, a DAG seen before not parsed again; a refusal is the full parse's own.
 */
export function decodeEvent(bytes: Uint8Array, at?: { seq?: number; subject?: string }, dags?: DagMemo): DroverEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw contractViolation("event", `not JSON (${(e as Error).message})`, at);
  }
  const event = (dags && submittedThroughMemo(raw, dags)) ?? parseEvent(raw, at);
  if (at?.subject !== undefined && !subjectNames(at.subject, event.type))
    throw contractViolation(`event ${event.type}`, `its subject ${at.subject} names another aggregate or event`, at);
  return event;
}

/**
 * A `run.submitted` whose DAG `dags` finds valid, with that checked (frozen) DAG in place of the
 * decoded one and every other field checked as `RunSubmitted` checks it; undefined when it is not a
 * submission, its DAG is refused or another field is (the caller then parses it in full, for the issues).
 */
function submittedThroughMemo(raw: unknown, dags: DagMemo): DroverEvent | undefined {
  const r = raw as { type?: unknown; data?: unknown } | null;
  if (r?.type !== "run.submitted" || typeof r.data !== "object" || r.data === null || Array.isArray(r.data))
    return undefined;
  const dag = dags.check((r.data as { dag?: unknown }).dag);
  if (!dag) return undefined;
  // The compiled path first: what it does not take, the runtime parser below decides.
  const fast = submittedFast(raw, () => dag);
  if (fast) return fast;
  // Every field but the DAG checked as `RunSubmitted` checks it (the DAG, valid, is passed through), then the checked DAG put in.
  const p = anyDagSubmitted().safeParse(raw);
  if (!p.success) return undefined;
  p.data.data.dag = dag;
  return p.data as DroverEvent;
}
/** `run.submitted` with any DAG, everything else as `RunSubmitted`; built and compiled on first use. */
const anyDagSubmitted = memo(() =>
  z.compile(
    RunSubmitted.schema.extend({
      data: RunSubmitted.schema.shape.data.extend({ dag: z.unknown() }),
    }),
  ),
);

/** Whether `subject` is a subject of an event of `type` (`<aggregate>.<name>`), whatever the layout's prefix. */
export function subjectNames(subject: string, type: string): boolean {
  const [aggregate, name] = type.split(".");
  const tokens = subject.split(".");
  return tokens.at(-1) === name && tokens.at(aggregate === "runtime" ? -3 : -4) === aggregate;
}

/**
 * `run.submitted` with its DAG and input checked only for being there as JSON (every other field,
 * and the envelope, as `RunSubmitted` checks them): for a fold that drops both (recovery). A DAG is
 * ~10× the schema work of any other event (zod plus `dagIssues`), and admission, which places the
 * run, checks it in full and rejects the run when it is invalid. Built and compiled on first use.
 */
const withoutPayload = memo(() =>
  z.compile(
    RunSubmitted.schema.extend({
      data: RunSubmitted.schema.shape.data.extend({
        dag: z.record(z.string(), z.unknown()),
        input: z.unknown().optional(),
      }),
    }),
  ),
);

/**
 * `decodeEvent`, except that a `run.submitted`'s DAG and input are not validated (see
 * `withoutPayload`): for folds that keep neither. Any other event is decoded in full.
 */
export function decodeEventWithoutPayload(bytes: Uint8Array, at: { seq?: number; subject: string }): DroverEvent {
  if (!at.subject.endsWith(".submitted") || !subjectNames(at.subject, "run.submitted")) return decodeEvent(bytes, at);
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw contractViolation("event", `not JSON (${(e as Error).message})`, at);
  }
  const r = withoutPayload().safeParse(raw);
  if (!r.success) throw contractViolation("event run.submitted", r.error.issues, at);
  return r.data as DroverEvent;
}
