import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { eventSubject, runRef } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

describe("admission refuses invalid submissions published straight to JetStream (real NATS + Redis; runtime transport replaced by an in-memory responder)", () => {
  const adm = admissionHarness("cp-adm-invalid");

  it("rejects every kind of invalid submission a trusted producer publishes straight to JetStream with a structured reason, and admits a valid one after them", async () => {
    await adm.readyRuntime("rt-blue-p", "t-blue", 3);
    await adm.capacityShows("rt-blue-p");
    await adm.admission();
    const js = jetstream(adm.fx.nc);
    const ctx = {
      writer: { service: "producer" as const, instanceId: "producer-1" },
      clock: systemClock,
      ids: randomIds,
    };
    const submitted = (id: string, data: Record<string, unknown> = {}, tenantId = "t-blue") => ({
      ...looseEvent(
        ctx,
        "run.submitted",
        { sharedRunId: id, dag: exampleDag, source: "producer", labels: {}, ...data },
        { tenantId, correlationId: id, causationId: "producer" },
      ),
    });
    const cases: [id: string, payload: string, why: RegExp][] = [
      ["run-bad-json", "{ not json", /not JSON/],
      ["run-bad-type", JSON.stringify({ ...submitted("run-bad-type"), type: "run.submited" }), /unknown event type/],
      [
        "run-bad-schema",
        JSON.stringify({
          ...submitted("run-bad-schema"),
          data: { sharedRunId: "run-bad-schema", source: "producer", labels: {} },
        }),
        /dag/,
      ],
      [
        "run-bad-writer",
        JSON.stringify({ ...submitted("run-bad-writer"), writer: { service: "robot", instanceId: "p" } }),
        /writer/,
      ],
      ["run-bad-field", JSON.stringify(submitted("run-bad-field", { priority: "high" })), /priority/],
      [
        "run-bad-cycle",
        JSON.stringify(
          submitted("run-bad-cycle", { dag: { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] } }),
        ),
        /steps/,
      ],
      [
        "run-bad-dep",
        JSON.stringify(submitted("run-bad-dep", { dag: { steps: [{ id: "a", kind: "compute", dependsOn: ["zz"] }] } })),
        /steps/,
      ],
      ["run-bad-tenant", JSON.stringify(submitted("run-bad-tenant", {}, "t-red")), /tenant/],
      ["run-bad-id", JSON.stringify(submitted("run-other-id")), /sharedRunId/],
      ["run-bad-notenant", JSON.stringify(submitted("run-bad-notenant", {}, "")), /tenant/],
    ];
    for (const [id, payload] of cases) {
      adm.tenantOf.set(id, "t-blue");
      await js.publish(eventSubject(adm.fx.layout, runRef("t-blue", id), "run.submitted"), payload);
    }
    await js.publish(
      eventSubject(adm.fx.layout, runRef("t-blue", "run-good"), "run.submitted"),
      JSON.stringify(submitted("run-good")),
    );
    adm.tenantOf.set("run-good", "t-blue");
    await eventually("good dispatched", async () =>
      (await adm.types("run-good")).includes("run.dispatched") ? true : undefined,
    );
    for (const [id, , why] of cases) {
      const raw = await eventually(`${id} rejected`, async () => {
        const m = await adm.fx.jsm.streams.getMessage(adm.fx.layout.eventStream, {
          last_by_subj: `${adm.fx.layout.eventPrefix}.run.t-blue.${id}.>`,
        });
        return m?.subject.endsWith(".rejected") ? m : undefined;
      });
      const rejected = JSON.parse(new TextDecoder().decode(raw.data)) as {
        tenantId: string;
        data: { reason: { code: string; detail: string } };
      };
      expect(rejected.tenantId, id).toBe("t-blue");
      expect(rejected.data.reason.code, id).toBe("contract-violation");
      expect(rejected.data.reason.detail, id).toMatch(why);
    }
    // Nothing was placed for any invalid submission: only the valid run reached the runtime.
    expect(
      adm.sent
        .filter((c) => c.operation === "DispatchRun")
        .map((c) => (c as { payload: { sharedRunId: string } }).payload.sharedRunId),
    ).toEqual(["run-good"]);
  });
});
