/**
 * Runtime instance process: wiring only. A cold start reads its identity and sizing from the
 * environment and starts at once; a pooled start (DROVER_POOL_BIND_PORT set, hosts.md "Warm pool")
 * first compiles its parsers and builds its HTTP command server (shell/warm-up.ts), and waits, tenant-neutral, for one binding that
 * supplies them (shell/pool-bind.ts).
 */
import { awaitBinding } from "./shell/pool-bind.ts";
import { startRuntime } from "./shell/start.ts";
import { prepareCommandServer, warmUpParsers } from "./shell/warm-up.ts";
import { selfIncarnation } from "../../platform/process-incarnation.ts";

if (process.env.DROVER_POOL_BIND_PORT) {
  // While still tenant-neutral and before it announces itself: the parsers its first resume would compile.
  warmUpParsers();
  // Its HTTP command server too, built and readied, not listening: the binding only sets its handler and listens.
  const commandServer = await prepareCommandServer(selfIncarnation(process.env.DROVER_POD_UID));
  const binding = await awaitBinding(process.env);
  try {
    const started = await startRuntime(process.env, commandServer);
    await binding.answer({ ok: true, ...started });
  } catch (e) {
    await binding.answer({ ok: false, detail: String((e as Error).message ?? e).slice(0, 2000) });
    process.exit(3);
  }
} else {
  await startRuntime(process.env);
}
