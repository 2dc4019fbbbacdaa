import type { z } from "zod";
import { DagDefinition } from "./dag.ts";

/**
 * DAGs this process has validated with `DagDefinition` and frozen (deeply, so they cannot change
 * after the check): `encodeEvent` does not parse such a DAG a second time when it validates the
 * `run.submitted` that carries it (the API checks a submission's DAG first, to answer `dag-invalid`
 * with every issue, and then appended it: two full parses per submission; issue 15). Membership is
 * by object identity, so only the very object the check returned is trusted, never an equal copy,
 * and no message read from anywhere (a decoded object is a new one) is ever in it.
 */
const checked = new WeakSet<object>();

/** `DagDefinition.safeParse`, and on success the parsed DAG frozen and remembered as checked. */
export function parseDag(dag: unknown): z.ZodSafeParseResult<DagDefinition> {
  const r = DagDefinition.safeParse(dag);
  if (r.success) {
    deepFreeze(r.data);
    checked.add(r.data);
  }
  return r;
}

/** Whether `dag` is a DAG {@link parseDag} returned (valid, and unchanged since: it is frozen). */
export function isCheckedDag(dag: unknown): boolean {
  return typeof dag === "object" && dag !== null && checked.has(dag);
}

/**
 * Freezes `v` and everything in it. No cycle guard: a DAG that parsed has none (each step's params
 * went through `JSON.stringify` in `dagIssues`, everything else is zod's fresh output).
 */
function deepFreeze(v: unknown): void {
  if (typeof v !== "object" || v === null) return;
  Object.freeze(v);
  if (Array.isArray(v)) for (let i = 0; i < v.length; i++) deepFreeze(v[i]);
  else for (const k in v) deepFreeze((v as Record<string, unknown>)[k]);
}
