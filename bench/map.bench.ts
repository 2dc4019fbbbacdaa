import { LocalRunId, SharedRunId } from "../contracts/index.ts";
import { executionIdFor } from "../services/runtime/index.ts";
/**
 * A 10 000-item map on one real runtime process (run with tsx: `make bench`), against a private
 * nats-server (control-flow.md "Map"):
 *
 *  - map_expand_ms: DispatchRun sent → `exec.map-expanded` journaled (resolving `input.items`,
 *    digesting them, the conditional append);
 *  - map_first_item_ms: `exec.map-expanded` → the first item's `exec.step-completed` (a trivial item);
 *  - map_items_per_s: items completed per second, first to last item (trivial compute items,
 *    maxConcurrency 8 on 8 workers), from the journal's server timestamps;
 *  - map_journal_bytes_per_item: bytes of the execution's journal (JSON events) per item.
 */
import { DagDefinition } from "../contracts/index.ts";
import { execRef } from "../streams/subjects.ts";
import { admitAndDispatch, openControlPlaneDouble } from "../test/support/control-plane-double.ts";
import { startRuntimeProcess } from "../test/support/runtime-process.ts";
import { startNats } from "../platform/local-servers.ts";
import { recordMetrics, round } from "./support/results.ts";

const ITEMS = Number(process.env.BENCH_MAP_ITEMS ?? 10_000);
const T = "t-bench";

async function main(): Promise<void> {
  const nats = await startNats();
  try {
    const cp = await openControlPlaneDouble(nats.url, "bench-map");
    const rt = await startRuntimeProcess({
      natsUrl: nats.url,
      streamTag: "bench-map",
      runtimeInstanceId: "rt-bench-map",
      transport: "http",
      tenantId: T,
      sizing: { workers: 8, maxConcurrentRuns: 1, localQueueCapacity: 1, maxWorkersPerRun: 8 },
    });
    try {
      const dag = DagDefinition.parse({
        name: "map-bench",
        steps: [
          {
            id: "each",
            kind: "compute",
            map: { over: "input.items", maxConcurrency: 8 },
          },
        ],
      });
      const input = { items: Array.from({ length: ITEMS }, (_, i) => i) };
      const placement = { tenantId: T, sharedRunId: "map-bench", localRunId: "map-bench-l1" };
      const dispatchedSeq = await admitAndDispatch(
        cp,
        {
          ...placement,
          runtimeInstanceId: rt.runtimeInstanceId,
          hostIncarnation: rt.hostIncarnation,
          transport: "http",
        },
        dag,
      );
      const sent = Date.now();
      const r = await rt.send({
        operation: "DispatchRun",
        payload: { ...placement, dag, input, dispatchedSeq, correlationId: "map-bench" },
      } as never);
      if (!r.success) throw new Error(`dispatch refused: ${r.failureReason} ${r.failureDetail}`);
      const executionId = executionIdFor(
        SharedRunId.parse(placement.sharedRunId),
        LocalRunId.parse(placement.localRunId),
      );
      let events = (await cp.store.read(execRef(T, executionId))).events;
      while (!events.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed")) {
        await new Promise((res) => setTimeout(res, 1000));
        events = (await cp.store.read(execRef(T, executionId))).events;
      }
      const at = (pred: (e: (typeof events)[number]) => boolean) => events.find(pred)!.time.getTime();
      const expanded = at((e) => e.event.type === "exec.map-expanded");
      const firstItem = at((e) => e.event.type === "exec.step-completed" && e.event.data.stepId !== "each");
      const items = events.filter((e) => e.event.type === "exec.step-completed" && e.event.data.stepId !== "each");
      if (items.length !== ITEMS) throw new Error(`${items.length} items completed, expected ${ITEMS}`);
      const span = (items.at(-1)!.time.getTime() - items[0]!.time.getTime()) / 1000;
      const bytes = events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.event)), 0);
      const metrics = {
        map_expand_ms: {
          unit: "ms",
          value: round(expanded - sent),
          note: `DispatchRun sent → exec.map-expanded of a ${ITEMS}-item map (client clock vs server timestamp)`,
        },
        map_first_item_ms: {
          unit: "ms",
          value: round(firstItem - expanded),
          note: "map-expanded → first item started",
        },
        map_items_per_s: {
          unit: "items/s",
          value: round((items.length - 1) / span),
          note: `${ITEMS} trivial compute items, maxConcurrency 8 on 8 workers, one runtime`,
        },
        map_journal_bytes_per_item: {
          unit: "bytes",
          value: round(bytes / ITEMS),
          note: `${events.length} events, ${bytes} bytes of JSON for ${ITEMS} items`,
        },
      };
      console.log(JSON.stringify(metrics, null, 2));
      await recordMetrics(metrics);
    } finally {
      await rt.kill();
      await cp.close();
    }
  } finally {
    await nats.stop();
  }
}

await main();
