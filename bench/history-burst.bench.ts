/**
 * The history responder under a resume burst (issue 15, W3): 20 executions' histories (exec.started
 * and 26 step-completed each) read together, 20 requests at once as a replacement's 20 resumes send
 * them, answered by `startHistoryResponder` on a connection of its own. Prints per round the time
 * from the first request to the last answer and each request's latency (median of BENCH_HB_ROUNDS).
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { loadavg } from "node:os";
import { ExecutionId, TenantId } from "../contracts/index.ts";
import { startNats } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { ensureStreams } from "../streams/ensure-streams.ts";
import { decodePage, historyPrefixOf } from "../streams/history-page.ts";
import { startHistoryResponder } from "../streams/history-responder.ts";
import { createEventStore, execRef } from "../streams/index.ts";
import { taggedLayout } from "../streams/layout.ts";
import { event } from "../test/support/streams.ts";
import { median } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_HB_ROUNDS ?? 40);
const EXECS = 20;
const nats = await startNats();
try {
  const nc = await connectHarness({ servers: nats.url });
  const layout = taggedLayout("hb");
  await ensureStreams(await jetstreamManager(nc), layout);
  const store = createEventStore(nc, layout);
  const tenantId = TenantId.parse("t-w");
  const ids = Array.from({ length: EXECS }, (_, i) => ExecutionId.parse(`exec-${String(i).padStart(32, "0")}`));
  const last = new Map(ids.map((id) => [id, 0]));
  const put = async (id: ExecutionId, type: "exec.started" | "exec.step-completed") => {
    const e = event(type, { tenantId });
    last.set(id, (await store.append(execRef(tenantId, id), e, { expectedSeq: last.get(id)! })).seq);
  };
  for (const id of ids) await put(id, "exec.started");
  for (let s = 0; s < 26; s++) for (const id of ids) await put(id, "exec.step-completed");
  const rnc = await connectHarness({ servers: nats.url });
  const sub = startHistoryResponder(rnc, await jetstreamManager(rnc), layout);
  await rnc.flush();
  const cnc = await connectHarness({ servers: nats.url });
  const walls: number[] = [];
  const each: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS + 3; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const lat = await Promise.all(
      ids.map(async (id) => {
        const m = await cnc.request(`${historyPrefixOf(layout)}.exec.${tenantId}.${id}`, JSON.stringify({ from: 1 }), {
          timeout: 5000,
        });
        const p = decodePage(m.data);
        if ("error" in p || p.msgs.length !== 27) throw new Error(`bad page for ${id}`);
        return performance.now() - t0;
      }),
    );
    const c = process.cpuUsage(c0);
    if (r < 3) continue; // warm-up rounds
    walls.push(Math.max(...lat));
    each.push(median(lat));
    cpu.push((c.user + c.system) / 1000);
  }
  console.log(
    JSON.stringify({
      load: loadavg()[0]!.toFixed(1),
      burstMs: median(walls).toFixed(1),
      requestMedianMs: median(each).toFixed(1),
      cpuMsPerBurst: median(cpu).toFixed(1),
    }),
  );
  sub.unsubscribe();
  for (const c of [nc, rnc, cnc]) await c.close();
} finally {
  await nats.stop();
}
