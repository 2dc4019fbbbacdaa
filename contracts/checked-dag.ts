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

/**
 * The DAGs of recent submissions by their JSON text, each checked once (`parseDag`: valid, frozen,
 * marked checked): a follower that decodes every `run.submitted` (admission) validates a DAG it has
 * seen before by one `JSON.stringify` and a lookup instead of the full DAG check (issue 15: most runs
 * carry a DAG an earlier run carried). The check is a function of the JSON value only, and equal
 * texts are equal values, so a remembered verdict is the verdict. Only valid DAGs are kept (a refused
 * one is parsed again by the caller, for its issues); at most `maxEntries`, least recently used out,
 * and none longer than `maxChars` (checked each time, never kept).
 */
export class DagMemo {
  private readonly byText = new Map<string, DagDefinition>();

  constructor(
    private readonly maxEntries = 256,
    private readonly maxChars = 16 * 1024,
  ) {}

  /** The checked DAG equal to `dag` (a value from `JSON.parse`), or undefined when `DagDefinition` refuses it. */
  check(dag: unknown): DagDefinition | undefined {
    const text = JSON.stringify(dag) as string | undefined;
    if (text === undefined || text.length > this.maxChars) {
      const r = parseDag(dag);
      return r.success ? r.data : undefined;
    }
    const seen = this.byText.get(text);
    if (seen) {
      this.byText.delete(text);
      this.byText.set(text, seen);
      return seen;
    }
    const r = parseDag(dag);
    if (!r.success) return undefined;
    this.byText.set(text, r.data);
    if (this.byText.size > this.maxEntries) this.byText.delete(this.byText.keys().next().value!);
    return r.data;
  }

  get size(): number {
    return this.byText.size;
  }
}
