import { z } from "zod";
import type { DagDefinition } from "./dag.ts";
import type { EventOf } from "./events.ts";
import { RunSubmitted } from "./events-run.ts";
import { canonicalSize, RUN_INPUT_MAX_BYTES } from "./json-size.ts";
import { isPlainJson } from "./plain-json.ts";
import { memo } from "./memo.ts";

/**
 * `run.submitted` with its two recursive fields, the DAG and the input, as `z.unknown()`. zod's
 * compiler refuses a schema with a reference cycle (the input's `z.json()`, a run step's child DAG),
 * so `RunSubmitted` and its variants ran on the runtime parser: the API's append of every submission
 * and admission's decode of it spent ~4 % and ~3 % of their CPU there in W2 (issue 15). Shaped as
 * `RunSubmitted` key for key (`extend` keeps a key's place), so the parsed value encodes the same.
 * Built and compiled on first use (memo.ts).
 */
const shell = memo(() =>
  z.compile(
    RunSubmitted.schema.extend({
      data: RunSubmitted.schema.shape.data.extend({ dag: z.unknown(), input: z.unknown().optional() }),
    }),
  ),
);

/**
 * `raw` as `RunSubmitted` parses it, with `dagOf`'s DAG in place of its own, when the compiled shell
 * accepts it, `dagOf` returns a DAG for it (one `parseDag` checked: the caller says how it knows),
 * and its input, if any, is JSON that `z.json()` keeps unchanged (`isPlainJson`) of at most
 * `RUN_INPUT_MAX_BYTES`: exactly what the full schema accepts there. Undefined otherwise: the caller
 * then runs the full parser, whose verdict and issues are the answer.
 */
export function submittedFast(
  raw: unknown,
  dagOf: (dag: unknown) => DagDefinition | undefined,
): EventOf<"run.submitted"> | undefined {
  const p = shell().safeParse(raw);
  if (!p.success) return undefined;
  const data = p.data.data;
  if (data.input !== undefined && !(isPlainJson(data.input) && canonicalSize(data.input) <= RUN_INPUT_MAX_BYTES))
    return undefined;
  const dag = dagOf(data.dag);
  if (dag === undefined) return undefined;
  data.dag = dag;
  return p.data as EventOf<"run.submitted">;
}
