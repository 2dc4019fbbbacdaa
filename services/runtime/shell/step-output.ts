import {
  DroverError,
  INLINE_OUTPUT_MAX_BYTES,
  OUTPUT_MAX_BYTES,
  type StepOutput,
  type StoredOutputRef,
} from "../../../contracts/index.ts";
import type { z } from "zod";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { SecretResolver } from "./secrets.ts";
import { sha256Hex } from "./step-runners.ts";

/** An output ready to journal: inline, or stored with its reference; `value` is what dependents read. */
export interface RecordableOutput {
  readonly value: z.infer<typeof StepOutput>;
  readonly outputDigest: string;
  readonly output?: z.infer<typeof StepOutput>;
  readonly outputRef?: StoredOutputRef;
}

const encoder = new TextEncoder();

/**
 * Turns what a step returned into what the journal records: JSON only (`step-output-too-large`
 * otherwise, or above OUTPUT_MAX_BYTES), never containing a secret value this runtime resolved
 * (`secret-in-output`), inline up to INLINE_OUTPUT_MAX_BYTES and otherwise put in the object store
 * under `prefix` (the journal keeps the reference; its digest is the output digest).
 */
export async function recordableOutput(
  raw: unknown,
  prefix: string,
  store: OutputStore | undefined,
  secrets: SecretResolver | undefined,
): Promise<RecordableOutput> {
  let text: string | undefined;
  try {
    text = JSON.stringify(raw);
  } catch (e) {
    throw new DroverError("step-output-too-large", `the output is not JSON: ${(e as Error).message}`);
  }
  if (text === undefined) throw new DroverError("step-output-too-large", "the output is not JSON");
  // What JSON.parse returns is JSON by construction.
  const value: z.infer<typeof StepOutput> = JSON.parse(text);
  const canonical = canonicalJson(value);
  // Its size without encoding it: only an output for the object store needs its bytes.
  const size = Buffer.byteLength(canonical, "utf8");
  if (size > OUTPUT_MAX_BYTES)
    throw new DroverError("step-output-too-large", `the output is ${size} bytes, more than ${OUTPUT_MAX_BYTES}`);
  if (secrets?.leaks(canonical))
    throw new DroverError("secret-in-output", "the output contains the value of a secret; it is not recorded");
  const outputDigest = sha256Hex(canonical);
  if (size <= INLINE_OUTPUT_MAX_BYTES) return { value, outputDigest, output: value };
  if (!store) throw new DroverError("output-store-unavailable", `a ${size}-byte output needs the object store`);
  return { value, outputDigest, outputRef: await store.put(prefix, encoder.encode(canonical)) };
}

/** The output a journal recorded: inline, or read back from the object store (digest-checked). */
export async function recordedOutput(
  c: { readonly output?: unknown; readonly outputRef?: StoredOutputRef },
  store: OutputStore | undefined,
): Promise<unknown> {
  if (!c.outputRef) return c.output;
  if (!store) throw new DroverError("output-store-unavailable", `output ${c.outputRef.name} needs the object store`);
  return JSON.parse(new TextDecoder().decode(await store.get(c.outputRef)));
}
