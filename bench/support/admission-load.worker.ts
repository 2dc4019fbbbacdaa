/**
 * The load of admission-rate.bench.ts on its own thread: the submitters (the API's conditional
 * `run.submitted` appends) and the in-memory runtime's `run.started` + `run.completed` appends. In
 * production these are other processes; on the bench's thread they took over half of its CPU, so
 * the figure measured the load generator as much as admission. Own NATS connection, same streams.
 */
import { readFileSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { createEventStore, eventTypeFilter, runRef, type StreamLayout } from "../../streams/index.ts";
import { looseEvent } from "../../test/support/loose-event.ts";

export interface LoadSetup {
  readonly natsUrl: string;
  readonly layout: StreamLayout;
  readonly tenantId: string;
  readonly runtimeInstanceId: string;
  readonly noAsyncTraces: boolean;
}

export interface Finish {
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly localRunId: string;
  readonly dispatchedSeq: number;
}

export type LoadCommand =
  | { readonly kind: "burst"; readonly ids: readonly string[]; readonly publishers: number }
  | { readonly kind: "offered"; readonly ids: readonly string[]; readonly rate: number }
  | { readonly kind: "finish"; readonly run: Finish }
  | { readonly kind: "drain" }
  | { readonly kind: "stop" };

/**
 * What the thread answers: `done` once a burst or offered series is all dispatched, or a drain or
 * stop is over, with the CPU this thread has used so far (ms, user + system).
 */
export interface LoadDone {
  readonly kind: "done";
  readonly cpuMs: number;
}

/** This thread's CPU ms so far (/proc/thread-self/stat, USER_HZ 100). */
const threadCpuMs = (): number => {
  const stat = readFileSync("/proc/thread-self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

const setup = workerData as LoadSetup;
const port = parentPort!;
const nc = await connectHarness({ servers: setup.natsUrl, noAsyncTraces: setup.noAsyncTraces });
const store = createEventStore(nc, setup.layout);
const dag = { steps: [{ id: "only", kind: "compute", params: { durationMs: 0 } }] };
const apiEnv = { writer: { service: "api" as const, instanceId: "bench" }, clock: systemClock, ids: randomIds };
const runtimeEnv = {
  writer: { service: "runtime" as const, instanceId: "fake-rt" },
  clock: systemClock,
  ids: randomIds,
};

// Runs seen dispatched (core subscription to the event subjects), and who waits for which.
const dispatched = new Set<string>();
let waiting = new Set<string>();
let allDispatched = (): void => {};
const sub = nc.subscribe(eventTypeFilter(setup.layout, "run.dispatched"));
void (async () => {
  for await (const m of sub) {
    const id = (m.json() as { correlationId: string }).correlationId;
    dispatched.add(id);
    waiting.delete(id);
    if (waiting.size === 0) allDispatched();
  }
})();
const dispatchOf = (ids: readonly string[]) =>
  new Promise<void>((ok, fail) => {
    waiting = new Set(ids.filter((i) => !dispatched.has(i)));
    const t = setTimeout(() => fail(new Error(`${waiting.size} runs not dispatched in 120 s`)), 120_000);
    allDispatched = () => {
      clearTimeout(t);
      ok();
    };
    if (waiting.size === 0) allDispatched();
  });

const submit = (id: string) =>
  store.append(
    runRef(setup.tenantId, id),
    looseEvent(
      apiEnv,
      "run.submitted",
      { sharedRunId: id, dag, source: "api", labels: {} },
      { tenantId: setup.tenantId, correlationId: id, causationId: "bench" },
    ),
    { expectedSeq: 0 },
  );

// The runtime records the run started and completed on the `dispatched` sequence, as the real
// runtime's conditional appends do.
const finishing = new Set<Promise<unknown>>();
const finish = async (p: Finish) => {
  const opts = { tenantId: p.tenantId, correlationId: p.sharedRunId, causationId: `run:${p.localRunId}` };
  const executionId = randomIds.next("ex");
  const data = { executionId, localRunId: p.localRunId };
  const started = looseEvent(runtimeEnv, "run.started", { ...data, runtimeInstanceId: setup.runtimeInstanceId }, opts);
  const completed = looseEvent(runtimeEnv, "run.completed", { ...data, outputDigest: "0" }, opts);
  await store.appendAll(runRef(p.tenantId, p.sharedRunId), [started, completed], { expectedSeq: p.dispatchedSeq });
};

const run = async (c: LoadCommand): Promise<boolean> => {
  switch (c.kind) {
    case "finish": {
      const f = finish(c.run).catch(() => undefined);
      finishing.add(f);
      void f.finally(() => finishing.delete(f));
      return false;
    }
    case "burst": {
      const all = dispatchOf(c.ids);
      let next = 0;
      await Promise.all(
        Array.from({ length: c.publishers }, async () => {
          while (next < c.ids.length) await submit(c.ids[next++]!);
        }),
      );
      await all;
      return true;
    }
    case "offered": {
      // Open loop: one submission every 1000/rate ms.
      const all = dispatchOf(c.ids);
      const t0 = performance.now();
      const pending: Promise<unknown>[] = [];
      for (const [i, id] of c.ids.entries()) {
        const wait = t0 + (i * 1000) / c.rate - performance.now();
        if (wait > 1) await new Promise((ok) => setTimeout(ok, wait));
        pending.push(submit(id));
      }
      await Promise.all(pending);
      await all;
      return true;
    }
    case "drain":
      await Promise.all([...finishing]);
      return true;
    case "stop":
      await Promise.all([...finishing]);
      sub.unsubscribe();
      await nc.close();
      return true;
  }
};
port.on("message", (c: LoadCommand) => {
  void run(c).then((answer) => {
    if (answer) port.postMessage({ kind: "done", cpuMs: threadCpuMs() } satisfies LoadDone);
    if (c.kind === "stop") port.close();
  });
});
