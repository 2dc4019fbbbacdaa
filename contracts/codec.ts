import type { z } from "zod";
import { DroverError } from "./errors.ts";
import { EVENT_DEFINITIONS, type DroverEvent } from "./events.ts";

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

/** Validates an event against the schema its `type` names; unknown types are violations. */
export function parseEvent(raw: unknown, at?: { seq?: number; subject?: string }): DroverEvent {
  const type = (raw as { type?: unknown } | null)?.type;
  const def = typeof type === "string" ? EVENT_DEFINITIONS.get(type) : undefined;
  if (!def) throw contractViolation("event", `unknown event type ${JSON.stringify(type)}`, at);
  const r = def.schema.safeParse(raw);
  if (!r.success) throw contractViolation(`event ${type}`, r.error.issues, at);
  return r.data as DroverEvent;
}

export function encodeEvent(event: DroverEvent): Uint8Array {
  return encoder.encode(JSON.stringify(parseEvent(event)));
}

export function decodeEvent(bytes: Uint8Array, at?: { seq?: number; subject?: string }): DroverEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw contractViolation("event", `not JSON (${(e as Error).message})`, at);
  }
  return parseEvent(raw, at);
}
