/**
 * Runtime instance process: wiring only. A cold start reads its identity and sizing from the
 * environment and starts at once; a pooled start (DROVER_POOL_BIND_PORT set, hosts.md "Warm pool")
 * first compiles its parsers and builds its HTTP command server (shell/warm-up.ts), and waits, tenant-neutral, for one binding that
 * supplies them (shell/pool-bind.ts), running its step path meanwhile on a journal of its own (shell/warm-up-steps.ts).
 */
import { awaitBinding } from "./shell/pool-bind.ts";
import { startRuntime } from "./shell/start.ts";
import { prepareCommandServer, warmUpParsers } from "./shell/warm-up.ts";
import { POOL_WARM_UP_AFTER_MS, warmUpWhileUnbound } from "./shell/warm-up-steps.ts";
import { selfIncarnation } from "../../platform/process-incarnation.ts";

// No top-level await: the bundle is CommonJS, so that a runtime loads it through a V8 code cache
// (platform/hosts/runtime-loader.cjs). A rejection ends the process as an uncaught one would.
void main();

async function main(): Promise<void> {
  if (process.env.DROVER_POOL_BIND_PORT) {
    // While still tenant-neutral and before it announces itself: the parsers its first resume would compile.
    warmUpParsers();
    // Its HTTP command server too, built and readied, not listening: the binding only sets its handler and listens.
    const commandServer = await prepareCommandServer(selfIncarnation(process.env.DROVER_POD_UID));
    // Then its step path, on a journal of its own, while it waits unbound: stopped when the binding comes.
    // Not at once: a refill starts as the binds before it finish, while their runtimes resume their runs.
    let bound = false;
    const warming = setTimeout(() => void warmUpWhileUnbound(() => bound), POOL_WARM_UP_AFTER_MS);
    const binding = await awaitBinding(process.env);
    bound = true;
    clearTimeout(warming);
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
}
