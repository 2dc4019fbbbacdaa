import { describe, expect, it } from "vitest";
import { RuntimeInstanceId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { emptyRuntime, evolveRuntime, stoppingSince, suspicion } from "./runtime-health.ts";

type RuntimeEvent = Parameters<typeof evolveRuntime>[1];
const fold = (events: DroverEvent[]) =>
  events.reduce(
    (r, e, i) => evolveRuntime(r, e as RuntimeEvent, i + 1, 1_000),
    emptyRuntime(RuntimeInstanceId.parse("rt-a")),
  );

describe("runtime health after a planned stop (pure fold; proves no transport)", () => {
  const live = [
    exampleEvent("runtime.registered"),
    exampleEvent("runtime.host-started"),
    exampleEvent("runtime.capacity-published"),
  ];
  const retired = exampleEvent("runtime.retired");
  const stopped = {
    ...retired,
    data: {
      reason: "host-stopped: provisioner stopped",
      stopped: {
        stopId: "stop-0123456789abcdef01234567",
        reason: { code: "host-stopped", detail: "provisioner stopped" },
        hostIncarnation: exampleEvent("runtime.host-started").data.hostIncarnation,
        proof: { kind: "process-exit", pid: 42, exitCode: null, signal: "SIGKILL" },
      },
    },
  } as DroverEvent;

  it("a published runtime whose heartbeats are old is suspected; once the log says it was retired by a stop, it is not", () => {
    expect(suspicion(fold(live), undefined, 1_000_000, 750)?.code).toBe("heartbeat-stale");
    const r = fold([...live, stopped]);
    expect(r.stopped?.stopId).toBe("stop-0123456789abcdef01234567");
    expect(suspicion(r, undefined, 1_000_000, 750)).toBeUndefined();
  });

  it("a runtime its provisioner marked draining (a planned stop under way) is not heartbeat-stale until the kill budget is spent; a host exit still counts at once", () => {
    // Folded at server time 1 000 ms: silent from then on, stale bound 750 ms, kill budget 15 s.
    const draining = fold([...live, exampleEvent("runtime.draining")]);
    expect(draining.drainingAtMs).toBe(1_000);
    expect(suspicion(draining, undefined, 16_000, 750, 0, 15_000)).toBeUndefined();
    expect(suspicion(draining, undefined, 16_751, 750, 0, 15_000)).toMatchObject({ code: "heartbeat-stale" });
    // Without the grace (or before the mark) the same silence is stale at once.
    expect(suspicion(draining, undefined, 1_751, 750)).toMatchObject({ code: "heartbeat-stale" });
    const exited = {
      ...exampleEvent("runtime.host-exited"),
      data: {
        ...exampleEvent("runtime.host-exited").data,
        hostIncarnation: live[1]!.type === "runtime.host-started" ? live[1]!.data.hostIncarnation : "",
      },
    } as DroverEvent;
    expect(
      suspicion(fold([...live, exampleEvent("runtime.draining"), exited]), undefined, 2_000, 750, 0, 15_000)?.code,
    ).toMatch(/host-exited|pod-deleted/);
  });

  it("a runtime whose start was requested (or a pool member that became ready) is not draining: its silence counts after one bound", () => {
    // Before, those two events fell through to `draining` and gave every such runtime the kill budget.
    const started = fold([exampleEvent("runtime.host-start-requested"), ...live]);
    expect(started.drainingAtMs).toBeUndefined();
    expect(suspicion(started, undefined, 1_751, 750, 0, 15_000)).toMatchObject({ code: "heartbeat-stale" });
  });

  it("a plain retirement carries no planned stop: nothing moves for it", () => {
    expect(fold([...live, retired]).stopped).toBeUndefined();
  });
});

describe("heartbeat silence counts only while the reader's view is live (pure; proves no transport)", () => {
  const live = fold([
    exampleEvent("runtime.registered"),
    exampleEvent("runtime.host-started"),
    exampleEvent("runtime.capacity-published"),
  ]);
  it("given a last beat long ago, when the view went live (start or NATS reconnect) less than a bound ago, then the runtime is not stale; a bound after that, it is", () => {
    const lastBeat = 100_000;
    const reconnectedAt = 1_000_000;
    expect(suspicion(live, lastBeat, reconnectedAt + 700, 750, reconnectedAt)).toBeUndefined();
    expect(suspicion(live, lastBeat, reconnectedAt + 800, 750, reconnectedAt)).toMatchObject({
      code: "heartbeat-stale",
      detail: "no heartbeat for 800 ms (bound 750 ms)",
    });
  });
  it("given a disconnected reader (view live since never), when any time passes, then nothing is stale", () => {
    expect(suspicion(live, 0, 10_000_000, 750, Number.POSITIVE_INFINITY)).toBeUndefined();
  });

  it("decidedSeq moves with every event but its own host's exit observations (a fence decided before those is still decided)", () => {
    const started = exampleEvent("runtime.host-started");
    const live = [exampleEvent("runtime.registered"), started, exampleEvent("runtime.capacity-published")];
    const host = started.data.hostIncarnation;
    const exitOf = (hostIncarnation: string) =>
      ({
        ...exampleEvent("runtime.host-exited"),
        data: { ...exampleEvent("runtime.host-exited").data, hostIncarnation },
      }) as DroverEvent;
    const suspected = fold([...live, exampleEvent("runtime.suspected")]);
    expect(suspected).toMatchObject({ lastSeq: 4, decidedSeq: 4 });
    const observed = fold([...live, exampleEvent("runtime.suspected"), exitOf(host), exitOf(host)]);
    expect(observed).toMatchObject({ lastSeq: 6, decidedSeq: 4 });
    expect(fold([...live, exampleEvent("runtime.suspected"), exitOf(host), exitOf("pod:another")])).toMatchObject({
      lastSeq: 6,
      decidedSeq: 6,
    });
    expect(
      fold([...live, exampleEvent("runtime.suspected"), exitOf(host), exampleEvent("runtime.fenced")]),
    ).toMatchObject({ lastSeq: 6, decidedSeq: 6 });
  });
});

describe("a lost connection: the NATS connection closed and the command endpoint refused (pure; proves no transport)", () => {
  const live = [
    exampleEvent("runtime.registered"),
    exampleEvent("runtime.host-started"),
    exampleEvent("runtime.endpoint-published"),
    exampleEvent("runtime.capacity-published"),
  ];
  it("suspects a published runtime with its evidence as the detail; not one that is draining, unpublished or already suspected", () => {
    const r = fold(live);
    expect(r.endpoint?.url).toBe(exampleEvent("runtime.endpoint-published").data.endpoint);
    expect(suspicion(r, 1_000, 1_100, 750, 0, 0, "closed; refused")).toEqual({
      code: "connection-lost",
      detail: "closed; refused",
    });
    expect(suspicion(r, 1_000, 1_100, 750)).toBeUndefined();
    expect(suspicion(fold(live.slice(0, 3)), 1_000, 1_100, 750, 0, 0, "x")).toBeUndefined();
    expect(suspicion(fold([...live, exampleEvent("runtime.draining")]), 1_000, 1_100, 750, 0, 0, "x")).toBeUndefined();
    expect(suspicion(fold([...live, exampleEvent("runtime.suspected")]), 1_000, 1_100, 750, 0, 0, "x")).toBeUndefined();
  });
});

describe("a runtime stopped from outside drover: its own heartbeat says draining (pure; proves no transport)", () => {
  const live = fold([
    exampleEvent("runtime.registered"),
    exampleEvent("runtime.host-started"),
    exampleEvent("runtime.endpoint-published"),
    exampleEvent("runtime.capacity-published"),
  ]);
  it("its closed connection and refused port are no lost connection while its last beat said draining", () => {
    // Before: the end of its drain (connection drained, listeners closed) was suspected at once.
    expect(suspicion(live, 1_000, 1_100, 750, 0, 15_000, "closed; refused")?.code).toBe("connection-lost");
    expect(suspicion(live, 1_000, 1_100, 750, 0, 15_000, "closed; refused", 1_000)).toBeUndefined();
  });
  it("its silence counts once the kill budget after its last draining beat is spent; a host exit still counts at once", () => {
    expect(suspicion(live, 1_000, 16_000, 750, 0, 15_000, undefined, 1_000)).toBeUndefined();
    expect(suspicion(live, 1_000, 16_751, 750, 0, 15_000, undefined, 1_000)).toMatchObject({ code: "heartbeat-stale" });
    // A draining runtime that keeps beating is live: the budget runs from its latest draining beat.
    expect(suspicion(live, 40_000, 50_000, 750, 0, 15_000, undefined, 40_000)).toBeUndefined();
    expect(suspicion(live, 1_000, 1_751, 750, 0, 15_000)).toMatchObject({ code: "heartbeat-stale" });
    const host = exampleEvent("runtime.host-started").data.hostIncarnation;
    const exited = {
      ...exampleEvent("runtime.host-exited"),
      data: { ...exampleEvent("runtime.host-exited").data, hostIncarnation: host },
    };
    const gone = evolveRuntime(live, exited as RuntimeEvent, 99, 1_500);
    expect(suspicion(gone, 1_000, 1_600, 750, 0, 15_000, undefined, 1_000)?.code).toMatch(/host-exited|pod-deleted/);
  });
  it("stopping since: the provisioner's mark or the runtime's beat, whichever is later", () => {
    expect(stoppingSince(live)).toBeUndefined();
    expect(stoppingSince(live, 5)).toBe(5);
    const marked = evolveRuntime(live, exampleEvent("runtime.draining") as RuntimeEvent, 99, 7);
    expect(stoppingSince(marked)).toBe(7);
    expect(stoppingSince(marked, 5)).toBe(7);
    expect(stoppingSince(marked, 9)).toBe(9);
  });
});
