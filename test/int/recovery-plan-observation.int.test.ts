import { createHash } from "node:crypto";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { reconcile, RecoveryState, type RecoveryDeps } from "../../services/recovery/index.ts";
import { createEventStore, execRef, runRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { mkEvent, readyProcessRuntime, writer } from "../support/recovery-fixture.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A recovery plan goes on top of the host's own observation of the fence's kill (real nats-server):
 * the provisioner's Pod watch records `host-exited` of the fenced incarnation while the reconcile
 * moves the runtime's work (on Kubernetes the grace-0 delete of a lost connection's fence comes
 * before the kubelet's report, so that record lands after `fenced`). The plan must still be
 * appended by that reconcile, once; before, its append conflicted and a later pass made it again.
 */
const CP = "cp-plan";
const INC = "pid:990777:1";
const INCIDENT = "inc-0123456789abcdef01234567";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 10_000 });

describe("recovery plan on top of a host observation of the fence's kill (real NATS)", () => {
  let fx: StreamsFixture, store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "plan");
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(() => fx.close());

  const runtimeLog = async (rt: string) => (await store.read(runtimeRef(rt))).events.map((e) => e.event.type);

  it("appends recovery-planned once, after the host-exited recorded while the work moved; another decision still conflicts it", async () => {
    for (const rt of ["rt-plan", "rt-other"]) {
      await readyProcessRuntime(store, { controlPlaneId: CP, rt, pid: 990777, incarnation: INC, tenantId: "t-a" });
      const at = await store.lastSeq(runtimeRef(rt));
      await store.appendAll(
        runtimeRef(rt),
        [
          mkEvent(writer("test"), "runtime.suspected", {
            incidentId: INCIDENT,
            reason: { code: "connection-lost", detail: "test" },
            hostIncarnation: INC,
          }),
          mkEvent(writer("test"), "runtime.fenced", {
            incidentId: INCIDENT,
            hostIncarnation: INC,
            proof: { kind: "process-exit", pid: 990777, exitCode: null, signal: "SIGKILL" },
          }),
        ],
        { expectedSeq: at },
      );
      // One in-flight run on it.
      const id = `run-${rt}`;
      const lr = `lr-${rt}`;
      const add = async (seq: number, type: DroverEvent["type"], data: unknown) =>
        (await store.append(runRef("t-a", id), mkEvent(writer("admission"), type, data, "t-a"), { expectedSeq: seq }))
          .seq;
      let seq = await add(0, "run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} });
      seq = await add(seq, "run.admitted", {
        runtimeInstanceId: rt,
        localRunId: lr,
        reservationId: "r",
        candidates: [],
        recovery: false,
      });
      seq = await add(seq, "run.dispatched", {
        runtimeInstanceId: rt,
        localRunId: lr,
        transport: "http",
        hostIncarnation: INC,
      });
      await add(seq, "run.started", { executionId: `exec-${rt}`, localRunId: lr, runtimeInstanceId: rt });
      await store.append(
        execRef("t-a", `exec-${rt}`),
        mkEvent(
          writer("runtime"),
          "exec.started",
          { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 5, epoch: 0 },
          "t-a",
        ),
        { expectedSeq: 0 },
      );
    }
    const state = new RecoveryState(fx.layout.eventPrefix, () => undefined);
    await store.replay({ seq: 1 }, (e) => state.applyOwn(e.subject, e.event, e.seq));
    // While the work moves, the host watch records the kill (rt-plan) or another decision lands (rt-other).
    const interleave = new Map<string, DroverEvent>([
      [
        "rt-plan",
        mkEvent(writer("test"), "runtime.host-exited", {
          hostIncarnation: INC,
          kind: "pod-deleted",
          exitCode: null,
          signal: null,
          detail: "observed by the test",
        }),
      ],
      [
        "rt-other",
        mkEvent(writer("test"), "runtime.fence-failed", {
          incidentId: INCIDENT,
          hostIncarnation: INC,
          reason: { code: "fence-timeout", detail: "another replica" },
          attempt: 1,
        }),
      ],
    ]);
    for (const rt of ["rt-plan", "rt-other"]) {
      let interleaved = false;
      const deps: RecoveryDeps = {
        config,
        layout: fx.layout,
        store: {
          ...store,
          appendAtomic: async (entries) => {
            const r = await store.appendAtomic(entries);
            if (!interleaved) {
              interleaved = true;
              await store.append(runtimeRef(rt), interleave.get(rt)!, {
                expectedSeq: await store.lastSeq(runtimeRef(rt)),
              });
            }
            return r;
          },
        },
        state,
        env: { ...writer("test"), writer: { service: "recovery", instanceId: "recovery-1" } },
        hosts: () => undefined,
        sha256: (x) => createHash("sha256").update(x).digest("hex"),
        log: pino({ level: "silent" }),
      };
      await reconcile(deps, state.runtimes.get(rt)!);
      expect(interleaved).toBe(true);
    }
    expect((await runtimeLog("rt-plan")).slice(-2)).toEqual(["runtime.host-exited", "runtime.recovery-planned"]);
    expect((await runtimeLog("rt-other")).filter((t) => t === "runtime.recovery-planned")).toEqual([]);
  });
});
