import { z } from "zod";
import { REF_PATH, collectRefs, refStep } from "./step-refs.ts";

/**
 * A map step (docs/control-flow.md "Map"): the step's kind runs once per item of an array, which
 * `over` names by the data-flow reference form (`input[.path]` or `steps.<dependency>.output[.path]`).
 * At most `maxConcurrency` items run at once; up to `toleratedFailures` items (a count, or a
 * percentage of the items as `"10%"`) may fail (no attempts left) and the map still completes.
 * Its output, what the fan-in step reads, is `{ items: [output | null per index], failed: [...] }`.
 */
export const MAP_LIMITS = { maxConcurrency: 1000, defaultMaxConcurrency: 10, maxItemsDefault: 10_000 } as const;
/** The longest map step id: item ids `<id>--<index>` must stay ids (63 characters) for indices up to 999 999. */
export const MAP_STEP_ID_MAX = 55;

export const ToleratedFailures = z.union([
  z.number().int().min(0).max(1_000_000),
  z.string().regex(/^(?:100|[1-9]?[0-9])(?:\.[0-9]{1,2})?%$/, 'a percentage is written like "10%" (0–100)'),
]);
export type ToleratedFailures = z.infer<typeof ToleratedFailures>;

export const MapSpec = z
  .object({
    over: z
      .string()
      .max(1024)
      .regex(REF_PATH, "map.over is input[.path] or steps.<dependency>.output[.path]")
      .describe("the array to map over, by reference"),
    maxConcurrency: z.number().int().min(1).max(MAP_LIMITS.maxConcurrency).default(MAP_LIMITS.defaultMaxConcurrency),
    toleratedFailures: ToleratedFailures.default(0).describe("items that may fail: a count or a percentage like 10%"),
  })
  .strict();
export type MapSpec = z.infer<typeof MapSpec>;

/** The id of item `index` of map step `stepId`: deterministic, so a resumed execution names the same items. */
export const mapItemId = (stepId: string, index: number): string => `${stepId}--${index}`;

const ITEM = /^(.+)--(0|[1-9][0-9]*)$/;
/** The map step and index an item id names, when `isMap(stepId)`; undefined for any other id. */
export function parseMapItemId(
  id: string,
  isMap: (stepId: string) => boolean,
): { readonly stepId: string; readonly index: number } | undefined {
  const m = ITEM.exec(id);
  if (!m || !isMap(m[1]!)) return undefined;
  return { stepId: m[1]!, index: Number(m[2]) };
}

/** How many failed items a map tolerates out of `count`: the count itself, or floor(count · p / 100). */
export function toleratedCount(t: ToleratedFailures, count: number): number {
  if (typeof t === "number") return t;
  return Math.floor((count * Number(t.slice(0, -1))) / 100);
}

interface MapStepShape {
  readonly id: string;
  readonly dependsOn: readonly string[];
  readonly params?: unknown;
  readonly map?: MapSpec;
}

/**
 * Problems with map steps and `item` references, each naming the step: `over` must name the input
 * or a dependency; `{"$ref": "item…"}` only in a map step; a map step id at most 55 characters; no
 * step id may look like an item of a map step (`<map>--<n>`).
 */
export function mapIssues(steps: readonly MapStepShape[]): string[] {
  const issues: string[] = [];
  const maps = new Set(steps.filter((s) => s.map).map((s) => s.id));
  for (const s of steps) {
    const itemRefs = collectRefs(s.params).refs.filter((r) => r === "item" || r.startsWith("item."));
    if (!s.map) {
      if (itemRefs.length > 0) issues.push(`step "${s.id}" references "${itemRefs[0]}" but is not a map step`);
      if (parseMapItemId(s.id, (id) => maps.has(id)))
        issues.push(`step id "${s.id}" is reserved for an item of map step "${s.id.replace(ITEM, "$1")}"`);
      continue;
    }
    if (s.id.length > MAP_STEP_ID_MAX)
      issues.push(`map step "${s.id}" has an id longer than ${MAP_STEP_ID_MAX} characters`);
    const dep = refStep(s.map.over);
    if (dep !== undefined && !s.dependsOn.includes(dep))
      issues.push(`map step "${s.id}" maps over "${s.map.over}" but does not depend on step "${dep}"`);
  }
  return issues;
}
