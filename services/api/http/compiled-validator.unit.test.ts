import { describe, expect, it } from "vitest";
import { validatorCompiler } from "fastify-type-provider-zod";
import { z } from "zod";
import { compiledValidator } from "./app.ts";

// Pure validation of request parts (proves no transport).
const Body = z
  .object({
    dag: z.object({ steps: z.array(z.object({ id: z.string().regex(/^[a-z]+$/), kind: z.literal("compute") })) }),
    input: z.json().optional(),
    idempotencyKey: z.string().max(8).optional(),
    priority: z.number().int().min(0).default(5),
  })
  .strict();

describe("the API's request validator over compiled schemas (pure: proves no transport)", () => {
  it("answers as fastify-type-provider-zod's validator over the schema itself: values, defaults and refusals", () => {
    const route = { schema: Body, method: "POST", url: "/v1/runs", httpPart: "body" } as const;
    const compiled = compiledValidator(route);
    const runtime = validatorCompiler(route);
    const cases: unknown[] = [
      { dag: { steps: [{ id: "a", kind: "compute" }] } },
      { dag: { steps: [{ id: "a", kind: "compute" }] }, input: { x: [1, "y", null] }, priority: 2 },
      { dag: { steps: [{ id: "A", kind: "compute" }] } },
      { dag: { steps: [] }, idempotencyKey: "much-too-long" },
      { dag: { steps: [] }, extra: true },
      { dag: { steps: [] }, priority: 1.5 },
      "not an object",
      null,
    ];
    expect(cases.map((c) => "value" in (compiled(c) as object))).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    for (const c of cases) {
      const [a, b] = [compiled(c), runtime(c)] as { value?: unknown; error?: Error & { validation?: unknown } }[];
      expect(a.value).toEqual(b.value);
      expect(a.error?.message).toEqual(b.error?.message);
      expect(a.error?.validation).toEqual(b.error?.validation);
    }
  });
});
