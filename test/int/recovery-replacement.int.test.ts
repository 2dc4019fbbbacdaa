import { createHash } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, describe, expect, inject, it } from "vitest";
import { tenantSettingsOf, type DroverEvent } from "../../contracts/index.ts";
import {
  LIMIT_REACHED,
  scaleOutDedupeKey,
  scaleOutRequestData,
  scaleOutRequestIdOf,
} from "../../aggregates/scale-out-plan.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import { SCALE_OUT_RETRY_MS } from "../../aggregates/scale-out-plan.ts";
import { createEventStore, execRef, runRef, runtimeRef, scaleOutRef, type StoredEvent } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { mkEvent, readyProcessRuntime, startSleepHost, writer } from "../support/recovery-fixture.ts";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

/**
 * The replacement of a failed runtime is asked for at its suspicion, beside the fence and the pause,
 * and admission's own scale-out for the requeued runs joins that request instead of making a second:
 * real recovery (process host strategy, `sleep` processes as hosts), real admission and capacity
 * projection, real nats-server and Redis. No provisioner runs: one request is one runtime (it
 * handles each request once); the runtime command transport is not exercised (admission-harness.ts).
 */
const CP = "cp-replace";
const h = admissionHarness(CP);

describe("recovery asks for a failed runtime's replacement before its runs are requeued (real NATS + Redis + host processes)", () => {
  const hosts: ChildProcess[] = [];
  const recoveries: RecoveryService[] = [];
  afterEach(async () => {
    for (const r of recoveries.splice(0)) await r.stop();
    for (const p of hosts.splice(0)) p.kill("SIGKILL");
  });

  async function recovery(): Promise<RecoveryService> {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    h.connections.push(nc);
    const s = await startRecovery({
      js: jetstream(nc),
      config: h.config,
      layout: h.fx.layout,
      store: createEventStore(nc, h.fx.layout),
      state: new RecoveryState(h.fx.layout.eventPrefix, () => undefined),
      env: writer("test"),
      hosts: () => createProcessStrategy(),
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    recoveries.push(s);
    await s.ready;
    return s;
  }

  /** A run of `tenant` started on `rt` (host incarnation `inc`), its execution two steps in. */
  async function startedRun(tenant: string, id: string, rt: string, inc: string) {
    const lr = `lr-${id}`;
    let seq = 0;
    const add = async (type: DroverEvent["type"], data: unknown, c = writer("admission")) => {
      seq = (await h.store.append(runRef(tenant, id), mkEvent(c, type, data, tenant), { expectedSeq: seq })).seq;
    };
    h.tenantOf.set(id, tenant);
    await add("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} });
    await add("run.admitted", {
      runtimeInstanceId: rt,
      localRunId: lr,
      reservationId: "r",
      candidates: [],
      recovery: false,
    });
    await add("run.dispatched", { runtimeInstanceId: rt, localRunId: lr, transport: "http", hostIncarnation: inc });
    const ex = `exec-${id}`;
    await add("run.started", { executionId: ex, localRunId: lr, runtimeInstanceId: rt }, writer("runtime", rt));
    const stepped = (stepId: string) =>
      mkEvent(
        writer("runtime"),
        "exec.step-completed",
        { stepId, attempt: 1, output: {}, outputDigest: "b".repeat(64), durationMs: 1 },
        tenant,
      );
    const started = mkEvent(
      writer("runtime"),
      "exec.started",
      { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 5, epoch: 0 },
      tenant,
    );
    await h.store.appendAll(execRef(tenant, ex), [started, stepped("a"), stepped("b")], { expectedSeq: 0 });
  }

  const log = async (): Promise<StoredEvent[]> => {
    const out: StoredEvent[] = [];
    await h.store.replay({ seq: 1 }, (e) => void out.push(e));
    return out;
  };

  it("one dedicated scale-out request per failed runtime, in the log before the first requeue, and the requeued runs wait on it", async () => {
    const dead = await startSleepHost(hosts);
    const live = await startSleepHost(hosts);
    const inc = await readyProcessRuntime(h.store, {
      controlPlaneId: CP,
      rt: "rt-blue-1",
      pid: dead.pid!,
      tenantId: "t-blue",
    });
    const incRed = await readyProcessRuntime(h.store, {
      controlPlaneId: CP,
      rt: "rt-red-1",
      pid: live.pid!,
      tenantId: "t-red",
    });
    await startedRun("t-blue", "run-b1", "rt-blue-1", inc);
    await startedRun("t-blue", "run-b2", "rt-blue-1", inc);
    await startedRun("t-red", "run-r1", "rt-red-1", incRed);
    await killAndRecordExit(dead, "rt-blue-1", inc);
    await h.admission();
    // Two recovery replicas race on the same incident: still one request.
    await Promise.all([recovery(), recovery()]);
    await eventually("both requeued runs queued on a scale-out", async () => {
      const types = [...(await h.types("run-b1")), ...(await h.types("run-b2"))];
      return types.filter((t) => t === "run.scale-out-requested").length >= 2 ? true : undefined;
    });
    const all = await log();
    const requests = all.filter((e) => e.event.type === "scaleout.requested");
    expect(requests).toHaveLength(1);
    const [req] = requests;
    if (req?.event.type !== "scaleout.requested") throw new Error("no scale-out request");
    const incidentId = all.find((e) => e.event.type === "runtime.suspected")?.event.data as { incidentId: string };
    expect(req.event.causationId).toBe(`replace:${incidentId.incidentId}`);
    // The replacement is the failed runtime's tenant's: dedicated to t-blue, under its prefix.
    expect(req.event.tenantId).toBe("t-blue");
    expect(req.event.data.policy.isolationMode).toBe("dedicated");
    // It names the runtime it replaces: the provisioner lets it take the warm pool's reserve.
    expect(req.event.data.replaces).toBe("rt-blue-1");
    const firstRequeue = all.find((e) => e.event.type === "run.requeued-for-resume")!;
    expect(req.seq).toBeLessThan(firstRequeue.seq);
    // Admission's scale-out for each requeued run found the open request: it waits on that one.
    for (const id of ["run-b1", "run-b2"]) {
      const asked = (await h.history(id)).filter((e) => e.event.type === "run.scale-out-requested");
      expect(asked.map((e) => (e.event.data as { requestId: string }).requestId)).toEqual([req.event.data.requestId]);
    }
    // The safe tenant's runtime is alive: nothing is asked for it, and its run did not move.
    expect(await h.types("run-r1")).not.toContain("run.requeued-for-resume");
  });
  const sha256 = (x: string) => createHash("sha256").update(x).digest("hex");
  const KEY = () => scaleOutDedupeKey(CP, tenantSettingsOf(h.config, "t-blue"), "no-visible-capacity");

  /** Admission's request of `generation` for t-blue's key, made now (before the loss). */
  async function admissionRequest(generation: number): Promise<string> {
    const requestId = scaleOutRequestIdOf(sha256, KEY(), generation);
    const data = scaleOutRequestData(
      h.config,
      tenantSettingsOf(h.config, "t-blue"),
      requestId,
      KEY(),
      { code: "no-visible-capacity", detail: "" },
      Date.now(),
    );
    const e = mkEvent(writer("admission"), "scaleout.requested", data, "t-blue");
    await h.store.append(scaleOutRef("t-blue", requestId), e, { expectedSeq: 0 });
    return requestId;
  }
  /** The provisioner's answer to it: the tenant is at its limit (counting the runtime about to be lost). */
  const rejectAtLimit = async (requestId: string) =>
    h.store.append(
      scaleOutRef("t-blue", requestId),
      mkEvent(
        writer("test"),
        "scaleout.rejected",
        { reason: { code: LIMIT_REACHED, detail: "2 live runtimes with prefix rt-t-blue, limit 2" } },
        "t-blue",
      ),
      { expectedSeq: await h.store.lastSeq(scaleOutRef("t-blue", requestId)) },
    );

  /** t-blue's runtime `rt` (its own prefix) with one run in flight, its host killed and its exit recorded. */
  async function lostRuntime(rt: string, run: string): Promise<void> {
    const dead = await startSleepHost(hosts);
    const inc = await readyProcessRuntime(h.store, { controlPlaneId: CP, rt, pid: dead.pid!, tenantId: "t-blue" });
    await startedRun("t-blue", run, rt, inc);
    await killAndRecordExit(dead, rt, inc);
  }

  /** SIGKILLs `dead` (runtime `rt`'s host), waits for its exit and records it as the provisioner would. */
  async function killAndRecordExit(dead: ChildProcess, rt: string, inc: string): Promise<void> {
    dead.kill("SIGKILL");
    await new Promise((r) => dead.once("exit", r));
    await h.store.append(
      runtimeRef(rt),
      mkEvent(writer("test"), "runtime.host-exited", {
        hostIncarnation: inc,
        kind: "exited",
        exitCode: 0,
        signal: null,
        detail: "",
      }),
      { expectedSeq: await h.store.lastSeq(runtimeRef(rt)) },
    );
  }

  const replacementRequests = async () =>
    (await log()).filter((e) => e.event.type === "scaleout.requested" && e.event.causationId?.startsWith("replace:"));

  /**
   * The replacement request, stored sooner after the rejection than the rejection's back-off
   * (SCALE_OUT_RETRY_MS, 10 s) would allow: stream times, where a 5 s deadline from the test's own
   * start counted a loaded machine's set-up against the product.
   */
  async function replacementBeforeBackOff(): Promise<StoredEvent> {
    const req = await eventually(
      "the replacement request",
      async () => (await replacementRequests())[0],
      SCALE_OUT_RETRY_MS + 10_000,
    );
    const rejected = (await log()).filter((e) => e.event.type === "scaleout.rejected").at(-1)!;
    expect(req.time.getTime() - rejected.time.getTime()).toBeLessThan(SCALE_OUT_RETRY_MS);
    return req;
  }

  it("a limit-reached rejection of a request made just before the loss does not hold the replacement back", async () => {
    await rejectAtLimit(await admissionRequest(0));
    await lostRuntime("rt-t-blue-lost1", "run-l1");
    await h.admission();
    await recovery();
    const req = await replacementBeforeBackOff();
    expect(req.event.data).toMatchObject({ requestId: scaleOutRequestIdOf(sha256, KEY(), 1), dedupeKey: KEY() });
    expect((await log()).filter((e) => e.event.type === "scaleout.requested")).toHaveLength(2);
  });

  it("an open request made before the loss is waited for, and its limit-reached rejection does not hold the replacement back", async () => {
    const before = await admissionRequest(0);
    await lostRuntime("rt-t-blue-lost2", "run-l2");
    await h.admission();
    await recovery();
    await eventually("the run requeued", async () =>
      (await h.types("run-l2")).includes("run.requeued-for-resume") ? true : undefined,
    );
    // While the request is open, nothing else is asked: one open request per key.
    expect(await replacementRequests()).toHaveLength(0);
    await rejectAtLimit(before);
    const req = await replacementBeforeBackOff();
    expect(req.event.data).toMatchObject({ requestId: scaleOutRequestIdOf(sha256, KEY(), 1) });
    expect((await log()).filter((e) => e.event.type === "scaleout.requested")).toHaveLength(2);
  });
});
