import { describe, expect, it } from "vitest";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { evolveRequest, initialRequestState, type ScaleOutEvent } from "./request-state.ts";
import { evolveRuntime, hasPrefix, type RuntimeEvent } from "./runtime-roster.ts";
import { runtimeInstanceIdOf } from "./runtime-id.ts";
import { strategyLayers } from "./start-record.ts";

const fold = (events: ScaleOutEvent[]) => events.reduce((s, e, i) => evolveRequest(s, i + 1, e), initialRequestState());

describe("provisioner folds and ids (pure)", () => {
  it("keeps the first requested and the first outcome: a duplicate can neither reopen nor change a settled request", () => {
    const second = { ...exampleEvent("scaleout.requested"), eventId: "ev-dup" } as ScaleOutEvent;
    const s = fold([
      exampleEvent("scaleout.requested"),
      second,
      exampleEvent("scaleout.observed"),
      exampleEvent("scaleout.fulfilled"),
      exampleEvent("scaleout.rejected"),
      exampleEvent("scaleout.expired"),
    ]);
    expect(s).toMatchObject({
      status: "fulfilled",
      fulfilledBy: "rt-tenant-a-0001",
      requestedEventId: "ev-scaleout-requested-1",
      lastSeq: 6,
    });
    expect(s.observations).toEqual([{ seq: 3, provisionerInstanceId: "prov-1" }]);
  });

  it("records the first ending of a runtime and ignores events at or below the folded sequence", () => {
    const r1 = evolveRuntime(undefined, "rt-x", 5, exampleEvent("runtime.host-exited") as RuntimeEvent);
    const r2 = evolveRuntime(r1, "rt-x", 6, exampleEvent("runtime.retired") as RuntimeEvent);
    expect(r2).toMatchObject({ endedBy: "host-exited", retired: true, lastSeq: 6 });
    expect(evolveRuntime(r2, "rt-x", 6, exampleEvent("runtime.capacity-published") as RuntimeEvent)).toBe(r2);
  });

  it("builds ids of at most 63 characters from a 31-character prefix and refuses suffixes that would blur prefixes", () => {
    const prefix = "p".repeat(31);
    expect(runtimeInstanceIdOf(prefix, "0123456789ab")).toHaveLength(44);
    expect(() => runtimeInstanceIdOf("rt-a", "b-0123456789")).toThrow(/suffix/);
    expect(hasPrefix("rt-a-b-0123456789ab", "rt-a")).toBe(false);
    expect(hasPrefix("rt-a-0123456789ab", "rt-a")).toBe(true);
  });

  it("never lets a strategy's partial proof through: a required layer it did not prove is reported missing", () => {
    const started = {
      outcome: "created" as const,
      host: { hostIncarnation: "pid:1:2" },
      endpoint: { endpoint: "http://127.0.0.1:1", aliases: [] },
      layersPassed: ["endpoint", "resource"] as const,
      owned: [],
    };
    expect(strategyLayers(started, ["resource", "host", "endpoint", "command"])).toEqual({
      passed: ["resource", "endpoint"],
      missing: ["host"],
    });
  });

  it("requires the route layer of an endpoint behind a shared Gateway route, even when the provider does not list it", () => {
    const routed = {
      outcome: "created" as const,
      host: { hostIncarnation: "pod:u1" },
      owned: [],
      endpoint: {
        endpoint: "127.0.3.1:8081",
        aliases: [],
        route: { kind: "GRPCRoute" as const, name: "rt", namespace: "ns" },
      },
    };
    const required = ["resource", "host", "endpoint", "command"] as const;
    expect(strategyLayers({ ...routed, layersPassed: ["resource", "host", "endpoint"] }, required).missing).toEqual([
      "route",
    ]);
    expect(
      strategyLayers({ ...routed, layersPassed: ["resource", "host", "endpoint", "route"] }, required).missing,
    ).toEqual([]);
  });
});
