import { describe, expect, it } from "vitest";
import { streamReplicas } from "./replicas.ts";
import { eventStreamConfig, streamConfigs } from "./definitions.ts";
import { taggedLayout } from "./layout.ts";

describe("stream replicas from NATS_REPLICAS (pure configuration parsing; proves no transport)", () => {
  it("defaults to 1 and takes 1..5 from the environment", () => {
    expect(streamReplicas({})).toBe(1);
    expect(streamReplicas({ NATS_REPLICAS: "" })).toBe(1);
    expect(streamReplicas({ NATS_REPLICAS: "3" })).toBe(3);
    expect(streamReplicas({ NATS_REPLICAS: "5" })).toBe(5);
  });
  it("refuses what JetStream would refuse (0, 6, not an integer)", () => {
    for (const bad of ["0", "6", "2.5", "three"])
      expect(() => streamReplicas({ NATS_REPLICAS: bad })).toThrow(RangeError);
  });
  it("an explicit replicas option wins over the environment for every stream", () => {
    const layout = taggedLayout("u");
    expect(streamConfigs(layout, { replicas: 3 }).map((c) => c.num_replicas)).toEqual([3, 3, 3]);
    expect(eventStreamConfig(layout).num_replicas).toBe(streamReplicas());
  });
});
