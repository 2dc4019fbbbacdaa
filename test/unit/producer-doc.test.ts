import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeEvent } from "../../contracts/index.ts";

const doc = readFileSync(resolve(import.meta.dirname, "../../docs/producers.md"), "utf8");

describe("docs/producers.md (the documented envelope; proves no transport)", () => {
  it("its example submission decodes as a valid run.submitted written by a producer", () => {
    const json = /```json\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(json).toBeDefined();
    const e = decodeEvent(new TextEncoder().encode(json!), {
      seq: 1,
      subject: "drover.run.acme.run-nightly-2026-11-29.submitted",
    });
    expect(e).toMatchObject({
      type: "run.submitted",
      tenantId: "acme",
      writer: { service: "producer" },
      data: { sharedRunId: "run-nightly-2026-11-29", source: "producer" },
    });
  });
});
