import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseEvent, RuntimeInstanceId, type Heartbeat } from "../../contracts/index.ts";
import { visibleEndpoint, type CapacityDescriptor } from "./descriptor.ts";
import { evolveCapacity, type CapacityInput, type RuntimeEvent } from "./fold.ts";
import { routability } from "./routability.ts";

const RT = RuntimeInstanceId.parse("rt-a-1");
const INC = "pid:100:5";
const T0 = Date.parse("2026-11-29T10:00:00.000Z");
// Parsed by the catalogue, so a test event is as valid as one read from the stream.
const env = (type: string, data: unknown, n: number) =>
  parseEvent({
    eventId: `e-${n}`,
    type,
    schemaVersion: 1,
    occurredAt: new Date(T0 + n).toISOString(),
    correlationId: "c",
    causationId: "c",
    writer: { service: "provisioner", instanceId: "p1" },
    data,
  }) as RuntimeEvent;

/** The provisioner's publications, in its own order (stream sequences ascending). */
function publisher(transport: "http" | "grpc"): CapacityInput[] {
  const evs: [string, unknown][] = [
    [
      "runtime.registered",
      {
        controlPlaneId: "cp",
        tenantId: "t-a",
        isolationMode: "dedicated",
        allowSharedFallback: false,
        pool: "default",
        hostProvider: "process",
        transport,
        sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
        requiredLayers: ["command", "endpoint", "host", "resource"],
      },
    ],
    ["runtime.host-started", { hostIncarnation: INC, pid: 100, convergence: "created" }],
    ...(["resource", "host", "endpoint", "command"] as const).map((layer): [string, unknown] => [
      "runtime.readiness-layer-passed",
      { layer, hostIncarnation: INC, detail: "" },
    ]),
    [
      "runtime.endpoint-published",
      {
        endpoint: "http://127.0.0.1:4000",
        aliases: [],
        routingHeader: "x-drover-runtime-instance-id",
        hostIncarnation: INC,
      },
    ],
    ["runtime.capacity-published", { hostIncarnation: INC }],
  ];
  return evs.map(([t, d], i) => ({ kind: "event", seq: i + 1, runtimeInstanceId: RT, event: env(t, d, i) }));
}

const beat = (n: number, slots: number, incarnation = INC): CapacityInput => ({
  kind: "heartbeat",
  beat: {
    type: "heartbeat",
    runtimeInstanceId: RT,
    hostIncarnation: incarnation,
    beat: n,
    at: new Date(T0 + n * 1000).toISOString(),
    workers: 1,
    activeWorkers: 0,
    availableWorkers: 1,
    queuedRuns: 0,
    runningRuns: 0,
    availableSlots: slots,
    paused: false,
    draining: false,
  } as Heartbeat,
});

/** Random interleaving of two sequences that preserves each one's own order. */
const interleaving = (a: CapacityInput[], b: CapacityInput[]) =>
  fc.array(fc.boolean(), { minLength: a.length + b.length, maxLength: a.length + b.length }).map((picks) => {
    const out: CapacityInput[] = [];
    let i = 0,
      j = 0;
    for (const p of picks) {
      if ((p && i < a.length) || j >= b.length) out.push(a[i++]!);
      else out.push(b[j++]!);
    }
    return out;
  });

const foldAll = (inputs: CapacityInput[]) =>
  inputs.reduce<CapacityDescriptor | undefined>((d, x) => evolveCapacity(d, x), undefined)!;
const ctx = { now: T0 + 10_000, staleMs: 3_000, reservedSlots: 0 };

describe("capacity fold (pure function; proves no transport)", () => {
  it("gives the same routability for every interleaving of publications and heartbeats", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("http" as const, "grpc" as const),
        fc.integer({ min: 3, max: 12 }),
        (transport, n) => {
          const beats = Array.from({ length: n }, (_, i) => beat(i + 1, 3));
          const reference = routability(foldAll([...publisher(transport), ...beats]), ctx);
          return (
            fc.assert(
              fc.property(interleaving(publisher(transport), beats), (order) => {
                expect(routability(foldAll(order), ctx)).toEqual(reference);
              }),
              { numRuns: 30 },
            ) === undefined
          );
        },
      ),
      { numRuns: 20 },
    );
  });

  it("never turns an endpoint-bearing descriptor endpoint-less before fenced, whatever the order and duplicates, for both transports", () => {
    const beats = Array.from({ length: 6 }, (_, i) => beat(i + 1, 2));
    const orders = fc.constantFrom("http" as const, "grpc" as const).chain((t) => interleaving(publisher(t), beats));
    fc.assert(
      fc.property(orders, fc.array(fc.nat({ max: 12 }), { maxLength: 6 }), (order, dupIdx) => {
        const withDups = [...order];
        for (const k of dupIdx) if (order[k]) withDups.push(order[k]!);
        let d: CapacityDescriptor | undefined;
        let seen = false;
        for (const x of withDups) {
          d = evolveCapacity(d, x);
          if (visibleEndpoint(d)) seen = true;
          else expect(seen).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("ignores a heartbeat whose beat is older than the one already folded, whatever its arrival time", () => {
    const d = foldAll([...publisher("http"), beat(5, 3), beat(4, 0)]);
    expect(routability(d, { ...ctx, now: T0 + 6_000 })).toMatchObject({
      canAcceptRun: true,
      effectiveAvailableSlots: 3,
    });
  });

  it("does not count heartbeats of another host incarnation", () => {
    const d = foldAll([...publisher("http"), beat(9, 3, "pid:999:1")]);
    expect(routability(d, ctx).reasons).toContain("heartbeat-missing");
  });

  it("never routes to a runtime whose endpoint was not published, for any interleaving, duplicates and either transport", () => {
    const beats = Array.from({ length: 6 }, (_, i) => beat(i + 1, 3));
    const noEndpoint = (t: "http" | "grpc") =>
      publisher(t).filter((x) => x.kind !== "event" || x.event.type !== "runtime.endpoint-published");
    const cases = fc
      .constantFrom("http" as const, "grpc" as const)
      .chain((t) => fc.tuple(fc.constant(t), interleaving(noEndpoint(t), beats)));
    fc.assert(
      fc.property(cases, fc.array(fc.nat({ max: 11 }), { maxLength: 6 }), ([transport, order], dupIdx) => {
        let d: CapacityDescriptor | undefined;
        for (const x of [...order, ...dupIdx.flatMap((k) => (order[k] ? [order[k]!] : []))]) {
          d = evolveCapacity(d, x);
          const r = routability(d, { ...ctx, now: T0 + 7_000 });
          expect(r.canAcceptRun).toBe(false);
          // Before registration the transport is not known yet; from then on the reason names it.
          expect(r.reasons).toContain(
            r.reasons.includes("not-registered") ? "not-registered" : `${transport}-endpoint-missing`,
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it("refuses capacity without an endpoint for both transports, naming the transport's reason", () => {
    for (const transport of ["http", "grpc"] as const) {
      const noEndpoint = publisher(transport).filter(
        (x) => x.kind !== "event" || x.event.type !== "runtime.endpoint-published",
      );
      const r = routability(foldAll([...noEndpoint, beat(1, 3)]), { ...ctx, now: T0 + 2_000 });
      expect(r.canAcceptRun).toBe(false);
      expect(r.reasons).toContain(`${transport}-endpoint-missing`);
    }
  });

  it("makes a runtime unschedulable at once when suspected, and hides the endpoint once fenced", () => {
    const base = [...publisher("http"), beat(1, 3)];
    const suspected = foldAll([
      ...base,
      {
        kind: "event",
        seq: 50,
        runtimeInstanceId: RT,
        event: env("runtime.suspected", { incidentId: "inc-1", reason: { code: "host-exited", detail: "" } }, 50),
      },
    ]);
    expect(routability(suspected, { ...ctx, now: T0 + 2_000 }).reasons).toContain("status-suspected");
    expect(visibleEndpoint(suspected)).toBeDefined();
    const fenced = evolveCapacity(suspected, {
      kind: "event",
      seq: 51,
      runtimeInstanceId: RT,
      event: env(
        "runtime.fenced",
        {
          incidentId: "inc-1",
          hostIncarnation: INC,
          proof: { kind: "process-exit", pid: 100, exitCode: null, signal: "SIGKILL" },
        },
        51,
      ),
    });
    expect(visibleEndpoint(fenced)).toBeUndefined();
    expect(fenced.status).toBe("fenced");
  });

  it("subtracts admission's reservations from the heartbeat's slots and refuses at zero", () => {
    const d = foldAll([...publisher("http"), beat(1, 2)]);
    expect(routability(d, { ...ctx, now: T0 + 2_000, reservedSlots: 1 }).effectiveAvailableSlots).toBe(1);
    expect(routability(d, { ...ctx, now: T0 + 2_000, reservedSlots: 2 }).reasons).toContain("no-available-slots");
  });

  it("treats a heartbeat older than the staleness bound as stale", () => {
    const d = foldAll([...publisher("http"), beat(1, 3)]);
    expect(routability(d, { ...ctx, now: T0 + 1_000 + 3_001 }).reasons).toContain("heartbeat-stale");
  });
});
