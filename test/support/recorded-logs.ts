import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseEvent } from "../../contracts/index.ts";
import type { RecordedEvent } from "../../aggregates/replay-validation.ts";

export const FIXTURES = resolve(import.meta.dirname, "../fixtures");

/** A recorded log from test/fixtures, every event decoded through its schema (a bad line throws naming its sequence). */
export function recordedLog(name: string): RecordedEvent[] {
  return readFileSync(`${FIXTURES}/${name}`, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { seq: number; subject: string; event: unknown })
    .map((r) => ({ seq: r.seq, subject: r.subject, event: parseEvent(r.event, { seq: r.seq, subject: r.subject }) }));
}

/** sha256 hex: the digest the runtime uses, injected into replay validation (aggregates do no crypto). */
export const sha256Hex = (s: string): string => createHash("sha256").update(s).digest("hex");
