import { describe, expect, it } from "vitest";
import { HostIncarnation, RuntimeInstanceId } from "../../../contracts/index.ts";
import { createCommandHandler } from "./command-handler.ts";
import type { DispatchReadAhead } from "./execution-open.ts";
import type { RuntimeInstance } from "./runtime-instance.ts";

// Unit tier: the transport-neutral handler with a stub instance; proves the order of its checks, not any store.
describe("command handler: a DispatchRun's dispatch check read goes out before the body's schema check", () => {
  const rt = "rt-a";
  const handlerWith = (instance: Partial<RuntimeInstance>) =>
    createCommandHandler({
      runtimeInstanceId: RuntimeInstanceId.parse(rt),
      hostIncarnation: HostIncarnation.parse("pid:1:1"),
      token: "secret-token-0123456789",
      instance: instance as RuntimeInstance,
      clock: { now: () => new Date(0) },
    });
  const body = (dag: unknown) => ({
    operation: "DispatchRun",
    runtimeInstanceId: rt,
    correlationId: "c1",
    payload: { sharedRunId: "r1", localRunId: "l1", tenantId: "t1", dag, dispatchedSeq: 3, correlationId: "c1" },
  });

  it("given a DispatchRun whose DAG the schema refuses, when handled, then the read was started first, the refusal is the schema's and the failed read is never unhandled", async () => {
    const ahead: unknown[] = [];
    const dispatches: unknown[] = [];
    const handler = handlerWith({
      readAhead: (b: unknown) => {
        ahead.push(b);
        const read = Promise.reject(new Error("read refused"));
        read.catch(() => undefined);
        return { tenantId: "t1", sharedRunId: "r1", read } as DispatchReadAhead;
      },
      dispatch: async (...a: unknown[]) => (dispatches.push(a), {}),
    });
    const answer = await handler({ routingHeader: rt, token: "secret-token-0123456789", body: body({ steps: [] }) });
    expect(answer.result).toMatchObject({ success: false, failureReason: "dag-invalid" });
    expect(ahead).toHaveLength(1);
    expect(dispatches).toHaveLength(0);
  });

  it("given a valid DispatchRun, when handled, then its dispatch gets the read started ahead; a wrong token reads nothing", async () => {
    const early = { tenantId: "t1", sharedRunId: "r1", read: Promise.resolve(undefined) } as DispatchReadAhead;
    const got: unknown[] = [];
    let reads = 0;
    const handler = handlerWith({
      readAhead: () => (reads++, early),
      dispatch: async (_p: unknown, e?: DispatchReadAhead) => (got.push(e), { duplicate: false }),
    });
    const dag = { steps: [{ id: "s1", kind: "compute", dependsOn: [] }] };
    const ok = await handler({ routingHeader: rt, token: "secret-token-0123456789", body: body(dag) });
    expect(ok.result.success).toBe(true);
    expect(got).toEqual([early]);
    const refused = await handler({ routingHeader: rt, token: "wrong-token-0123456789", body: body(dag) });
    expect(refused.result).toMatchObject({ success: false, failureReason: "command-unauthorized" });
    expect(reads).toBe(1);
  });
});
