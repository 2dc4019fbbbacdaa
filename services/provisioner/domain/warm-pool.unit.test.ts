import { describe, expect, it } from "vitest";
import { exampleEvent } from "../../../test/support/example-events.ts";
import type { DroverEvent } from "../../../contracts/index.ts";
import { emptyRoster, evolveRoster, liveByPrefix, type Roster, type RuntimeEvent } from "./runtime-roster.ts";
import {
  claimCarriedLayers,
  claimableMembers,
  refillCount,
  refillPace,
  replacesLost,
  reservedForReplacements,
} from "./warm-pool.ts";

const INC = "pid:4242:987654";
let seq = 0;
const fold = (r: Roster, id: string, ...events: DroverEvent[]): Roster =>
  events.reduce((acc, e) => evolveRoster(acc, ++seq, id, e as RuntimeEvent), r);
const ev = <T extends DroverEvent["type"]>(type: T, data: Record<string, unknown> = {}): DroverEvent => {
  const base = exampleEvent(type) as DroverEvent & { data: Record<string, unknown> };
  return { ...base, data: { ...base.data, ...data } } as DroverEvent;
};
const layer = (l: string) => ev("runtime.readiness-layer-passed", { layer: l, hostIncarnation: INC });
const ready = (r: Roster, id: string): Roster =>
  fold(
    r,
    id,
    ev("runtime.pool-member-registered"),
    ev("runtime.host-started", { hostIncarnation: INC }),
    layer("resource"),
    layer("host"),
    layer("endpoint"),
    ev("runtime.pool-member-ready", { hostIncarnation: INC }),
  );

// Pure folds over in-memory events: these prove the claim/bind bookkeeping, no transport.
describe("warm pool fold (pure, proves no transport)", () => {
  it("lists a member as claimable only once every pool layer passed and pool-member-ready is recorded", () => {
    let r = fold(emptyRoster(), "pool-aaaaaaaaaaaa", ev("runtime.pool-member-registered"));
    r = fold(r, "pool-aaaaaaaaaaaa", ev("runtime.host-started", { hostIncarnation: INC }), layer("resource"));
    expect(claimableMembers(r, "process")).toEqual([]);
    expect(refillCount(r, "process", 2)).toBe(1);
    r = ready(r, "pool-bbbbbbbbbbbb");
    expect(claimableMembers(r, "process").map((m) => m.runtimeInstanceId)).toEqual(["pool-bbbbbbbbbbbb"]);
    expect(claimableMembers(r, "kubernetes")).toEqual([]);
    expect(refillCount(r, "process", 2)).toBe(0);
  });

  it("counts and offers only its own control plane's members when asked for one (another control plane's pool is not ours)", () => {
    const r = ready(emptyRoster(), "pool-eeeeeeeeeeee");
    const cp = r.runtimes.get("pool-eeeeeeeeeeee")!.pool!.controlPlaneId;
    expect(claimableMembers(r, "process", cp).map((m) => m.runtimeInstanceId)).toEqual(["pool-eeeeeeeeeeee"]);
    expect(claimableMembers(r, "process", "cp-other")).toEqual([]);
    expect(refillCount(r, "process", 1, cp)).toBe(0);
    expect(refillCount(r, "process", 1, "cp-other")).toBe(1);
  });

  it("never lists a claimed member again, even after the runtime it was bound to retired (no cross-tenant reuse)", () => {
    let r = ready(emptyRoster(), "pool-cccccccccccc");
    r = fold(
      r,
      "pool-cccccccccccc",
      ev("runtime.pool-member-claimed", { runtimeInstanceId: "rt-tenant-a-000000000001" }),
    );
    r = fold(r, "rt-tenant-a-000000000001", ev("runtime.registered"), ev("runtime.retired"));
    expect(claimableMembers(r, "process")).toEqual([]);
    expect(refillCount(r, "process", 1)).toBe(1);
  });

  it("drops a member whose host exited while unbound and asks for a replacement", () => {
    let r = ready(emptyRoster(), "pool-dddddddddddd");
    r = fold(r, "pool-dddddddddddd", ev("runtime.host-exited", { hostIncarnation: INC }));
    expect(claimableMembers(r, "process")).toEqual([]);
    expect(refillCount(r, "process", 1)).toBe(1);
  });

  it("counts only the members this provisioner started: ones another (stopped or SIGKILLed) provisioner left in the log do not hold its pool", () => {
    let r = ready(emptyRoster(), "pool-ffffffffffff");
    r = ready(r, "pool-gggggggggggg");
    const mine = new Set(["pool-gggggggggggg"]);
    expect(refillCount(r, "process", 2, undefined, (id) => mine.has(id))).toBe(1);
    expect(refillCount(r, "process", 2, undefined, () => false)).toBe(2);
    expect(refillCount(r, "process", 2)).toBe(0);
  });

  it("retires a member with a planned stop (runtime.retired): it is no longer held", () => {
    let r = ready(emptyRoster(), "pool-hhhhhhhhhhhh");
    r = fold(r, "pool-hhhhhhhhhhhh", ev("runtime.retired"));
    expect(claimableMembers(r, "process")).toEqual([]);
    expect(refillCount(r, "process", 1)).toBe(1);
  });

  it("never counts pool members against a tenant's prefix limit", () => {
    const r = ready(emptyRoster(), "pool-eeeeeeeeeeee");
    expect(liveByPrefix(r, "pool")).toEqual([]);
  });
});

describe("warm pool refill pace and replacements' reserve (pure, proves no transport)", () => {
  it("refills a pool under a quarter full twice the start slots at once without yielding, a fuller one the start slots at once after the binds", () => {
    // P=20 proof, pool 64: the fleet's 60 first placements leave 4.
    expect(refillPace(4, 64, 4, 0)).toEqual({ starts: 8, yields: false });
    expect(refillPace(0, 110, 4, 0)).toEqual({ starts: 8, yields: false });
    expect(refillPace(50, 110, 4, 0)).toEqual({ starts: 4, yields: true });
    expect(refillPace(16, 64, 4, 0)).toEqual({ starts: 4, yields: true });
  });

  it("refills urgently while a scale-out waits for a member or a start slot, however full the pool", () => {
    expect(refillPace(60, 64, 4, 1)).toEqual({ starts: 8, yields: false });
  });

  it("leaves a quarter of the pool to replacements", () => {
    expect(reservedForReplacements(64)).toBe(16);
    expect(reservedForReplacements(110)).toBe(27);
    expect(reservedForReplacements(3)).toBe(0);
  });

  it("takes a request as a replacement when it names a lost runtime, or when its prefix's runtime registered last was lost", () => {
    const prefix = "rt-tenant-a";
    let r = fold(emptyRoster(), `${prefix}-aaaaaaaaaaaa`, ev("runtime.registered"));
    expect(replacesLost(r, prefix)).toBe(false);
    expect(replacesLost(r, prefix, `${prefix}-aaaaaaaaaaaa`)).toBe(true);
    r = fold(r, `${prefix}-aaaaaaaaaaaa`, ev("runtime.host-exited"));
    expect(replacesLost(r, prefix)).toBe(true);
    // Not another tenant's (prefixes are exact).
    expect(replacesLost(r, "rt-tenant")).toBe(false);
    // A start that failed replaced nothing; a runtime registered after the loss did.
    r = fold(r, `${prefix}-bbbbbbbbbbbb`, ev("runtime.registered"), ev("runtime.host-start-failed"));
    expect(replacesLost(r, prefix)).toBe(true);
    r = fold(r, `${prefix}-cccccccccccc`, ev("runtime.registered"));
    expect(replacesLost(r, prefix)).toBe(false);
    // It retires (a drain): still a first placement. A later one fenced is lost again.
    r = fold(r, `${prefix}-cccccccccccc`, ev("runtime.retired"));
    expect(replacesLost(r, prefix)).toBe(false);
    r = fold(r, `${prefix}-dddddddddddd`, ev("runtime.registered"), ev("runtime.fenced"));
    expect(replacesLost(r, prefix)).toBe(true);
  });
});

describe("claimCarriedLayers (pure, no transport)", () => {
  it("a claim carries the layers a binding leaves as proven: a process member's resource and host, a Kubernetes member's resource (its Pod), never endpoint or command", () => {
    expect(claimCarriedLayers("process")).toEqual(["resource", "host"]);
    // A Kubernetes member's host is its Pod's readiness, which after a binding is the bound runtime's: the bind proves it.
    expect(claimCarriedLayers("kubernetes")).toEqual(["resource"]);
  });
});
