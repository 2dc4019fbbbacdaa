import { z } from "zod";

/**
 * A placeholder of a flow key expression: `{input[.path]}` (the run's input or a part of it, the
 * step-refs path form) or `{labels.<name>}` (one of the run's labels).
 */
export const FLOW_KEY_PLACEHOLDER = /\{(input(?:\.[A-Za-z0-9_-]{1,128}){0,32}|labels\.[A-Za-z0-9_.-]{1,63})\}/g;
const EXPRESSION = /^(?:[^{}]|\{(?:input(?:\.[A-Za-z0-9_-]{1,128}){0,32}|labels\.[A-Za-z0-9_.-]{1,63})\})+$/;

/**
 * One flow key of a tenant (docs/flow-control.md): runs whose `key` expression resolves (every
 * placeholder names a string, number or boolean) hold the key from admission until they end. At most
 * `concurrency` runs hold one key value at once, and admissions under it follow a GCRA throttle of
 * `rate.perSecond` with bursts of `rate.burst`. Enforced by conditional appends on the key's own
 * aggregate, so every admission replica sees the same count and the same theoretical arrival time.
 */
export const FlowKeySettings = z
  .object({
    name: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "a flow key name is lowercase [a-z0-9-]"),
    key: z
      .string()
      .min(1)
      .max(256)
      .regex(EXPRESSION, "a flow key expression is text with {input[.path]} or {labels.<name>} placeholders"),
    concurrency: z.number().int().min(1).max(100_000).optional(),
    rate: z
      .object({
        perSecond: z.number().positive().max(10_000),
        burst: z.number().int().min(1).max(10_000).default(1),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((k) => k.concurrency !== undefined || k.rate !== undefined, {
    message: "a flow key limits concurrency, rate or both",
  });
export type FlowKeySettings = z.infer<typeof FlowKeySettings>;

/** A run's priority on submission: higher goes first within its tenant (capped by the tenant's maxRunPriority). */
export const RunPriority = z.number().int().min(0).max(100);
export const MAX_FLOW_KEYS = 16;
