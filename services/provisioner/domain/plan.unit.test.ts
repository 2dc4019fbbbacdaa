import { describe, expect, it } from "vitest";
import { ScaleOutRequestId, type DroverEvent, type EventOf } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { planRequest, type PlanInput } from "./plan.ts";
import { evolveRequest, initialRequestState, type ScaleOutEvent } from "./request-state.ts";
import { emptyRoster, evolveRoster, type RuntimeEvent } from "./runtime-roster.ts";

// given(request events, runtime events) → when(plan at `now`) → then(plan). Pure: proves no IO.
const NOW = new Date("2026-01-02T03:00:00.000Z");
const requested = (
  policy: Partial<EventOf<"scaleout.requested">["data"]["policy"]> = {},
  patch: Partial<EventOf<"scaleout.requested">["data"]> = {},
) => {
  const e = exampleEvent("scaleout.requested");
  return {
    ...e,
    data: { ...e.data, expiresAt: "2026-01-02T03:05:00.000Z", ...patch, policy: { ...e.data.policy, ...policy } },
  } as ScaleOutEvent;
};
const observed = exampleEvent("scaleout.observed") as ScaleOutEvent;

function given(request: ScaleOutEvent[], runtimes: [string, RuntimeEvent][] = []): Omit<PlanInput, "now"> {
  const s = request.reduce((acc, e, i) => evolveRequest(acc, i + 1, e), initialRequestState());
  const roster = runtimes.reduce((r, [id, e], i) => evolveRoster(r, 100 + i, id, e), emptyRoster());
  return { request: s, roster, suffix: "abc123def456", providers: ["process"] };
}
const rt = <T extends RuntimeEvent["type"]>(type: T, patch: Partial<EventOf<T>["data"]> = {}): RuntimeEvent => {
  const e = exampleEvent(type) as DroverEvent & { data: object };
  return { ...e, data: { ...e.data, ...patch } } as RuntimeEvent;
};
const registered = (requestId = "so-other") =>
  rt("runtime.registered", { scaleOutRequestId: ScaleOutRequestId.parse(requestId) });
const when = (g: Omit<PlanInput, "now">, now = NOW) => planRequest({ ...g, now });

describe("scale-out plan (given/when/then; pure)", () => {
  it("starts a runtime named <prefix>-<suffix>, registered from the request's policy, owned by a dedicated tenant", () => {
    const plan = when(given([requested(), observed]));
    expect(plan.abandon).toEqual([]);
    expect(plan.next).toMatchObject({
      kind: "start",
      runtimeInstanceId: "rt-tenant-a-abc123def456",
      registration: {
        tenantId: "tenant-a",
        isolationMode: "dedicated",
        hostProvider: "process",
        transport: "http",
        scaleOutRequestId: "so-0001",
        requiredLayers: ["resource", "host", "endpoint", "command"],
      },
    });
  });

  it("registers a shared runtime without an owner", () => {
    const plan = when(given([requested({ isolationMode: "shared" }), observed]));
    expect(plan.next.kind === "start" && "tenantId" in plan.next.registration).toBe(false);
  });

  it("rejects with scale-out-limit-reached when the tenant's live runtimes by prefix are at maxRuntimeInstances", () => {
    const plan = when(
      given(
        [requested({ maxRuntimeInstances: 2 }), observed],
        [
          ["rt-tenant-a-aaaaaaaaaaaa", registered()],
          ["rt-tenant-a-bbbbbbbbbbbb", registered()],
        ],
      ),
    );
    expect(plan.next).toMatchObject({ kind: "reject", reason: { code: "scale-out-limit-reached" } });
  });

  it("counts only this prefix's live runtimes: never another tenant's, an overlapping prefix's, or ended ones", () => {
    const plan = when(
      given(
        [requested({ maxRuntimeInstances: 1 }), observed],
        [
          ["rt-tenant-b-aaaaaaaaaaaa", registered()],
          ["rt-tenant-a-b-cccccccccccc", registered()],
          ...(
            ["runtime.host-start-failed", "runtime.host-exited", "runtime.fenced", "runtime.retired"] as const
          ).flatMap((end, i): [string, RuntimeEvent][] => {
            const id = `rt-tenant-a-ended${i}aaaaaaa`;
            return [
              [id, registered()],
              [id, rt(end)],
            ];
          }),
        ],
      ),
    );
    expect(plan.next.kind).toBe("start");
  });

  it("does not count a runtime recovery suspected: it never serves again, and its replacement must not wait for the host's exit", () => {
    const limited = [requested({ maxRuntimeInstances: 1 }), observed];
    const id = "rt-tenant-a-aaaaaaaaaaaa";
    expect(when(given(limited, [[id, registered()]])).next.kind).toBe("reject");
    expect(
      when(
        given(limited, [
          [id, registered()],
          [id, rt("runtime.suspected")],
        ]),
      ).next.kind,
    ).toBe("start");
  });

  it("expires a request at or after expiresAt instead of starting anything", () => {
    expect(when(given([requested(), observed]), new Date("2026-01-02T03:05:00.000Z")).next).toEqual({ kind: "expire" });
  });

  it("rejects with host-config-missing when no strategy for the provider is configured", () => {
    expect(when(given([requested({}, { providerHint: "kubernetes" }), observed])).next).toMatchObject({
      kind: "reject",
      reason: { code: "host-config-missing" },
    });
  });

  it("fulfils with an earlier attempt that published capacity, even past expiry, and abandons nothing", () => {
    const id = "rt-tenant-a-earlier00000";
    const plan = when(
      given(
        [requested(), observed, observed],
        [
          [id, registered("so-0001")],
          [id, rt("runtime.capacity-published")],
        ],
      ),
      new Date("2027-01-01T00:00:00.000Z"),
    );
    expect(plan).toEqual({ abandon: [], next: { kind: "fulfil", runtimeInstanceId: id } });
  });

  it("abandons an earlier attempt that never published and does not count it against the limit", () => {
    const id = "rt-tenant-a-earlier00000";
    const plan = when(
      given(
        [requested({ maxRuntimeInstances: 1 }), observed, observed],
        [
          [id, registered("so-0001")],
          [id, rt("runtime.host-started")],
        ],
      ),
    );
    expect(plan.abandon.map((r) => r.runtimeInstanceId)).toEqual([id]);
    expect(plan.next.kind).toBe("start");
  });

  it("refuses to plan a request that is already settled", () => {
    expect(() => when(given([requested(), observed, exampleEvent("scaleout.fulfilled") as ScaleOutEvent]))).toThrow(
      /not open/,
    );
  });
});
