import { Worker } from "node:worker_threads";
import type { StreamLayout } from "../../../streams/index.ts";

/** What the responders thread needs: the provisioner's NATS identity, the layout and the callout's keys. */
export interface RespondersConfig {
  readonly servers: string;
  readonly creds?: string;
  readonly caFile?: string;
  /** The connection's name (the provisioner's instance id and `-responders`). */
  readonly name: string;
  readonly layout: StreamLayout;
  /** Absent on an open server (no DROVER_NATS_CALLOUT_SEED): history only. */
  readonly callout?: { readonly seed: string; readonly secret: string; readonly ttlMs: number };
}

export type ResponderMessage =
  | { readonly kind: "ready" }
  | { readonly kind: "stopped" }
  | {
      readonly kind: "log";
      readonly level: "info" | "warn";
      readonly fields: Record<string, unknown>;
      readonly msg: string;
    };

export interface ResponderLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export interface Responders {
  /** Stops answering (in-flight answers settle) and ends the thread. */
  stop(): Promise<void>;
}

/** Restart delay of a responders thread that died (its subscriptions died with it). */
const RESTART_MS = 1_000;

/**
 * Starts the runtimes' auth callout and history responder on a thread of their own (responders-worker.ts),
 * with their own NATS connection under the provisioner's identity (no new rights): on the
 * provisioner's loop their answers waited behind binds, spawns, appends and /proc reads, and a
 * P=5 recovery burst's callouts took 44–357 ms inside the provisioner (2026-12-05). Resolves once
 * both subscriptions are on the server; a thread that dies is logged and started again.
 * The thread runs the TypeScript source through tsx (the provisioner may itself run from a bundle).
 */
export async function startResponders(cfg: RespondersConfig, log: ResponderLog): Promise<Responders> {
  const tsx = import.meta.resolve("tsx/esm/api");
  const entry = new URL("./responders-worker.ts", import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry)}); });`;
  let stopping = false;
  let current: Worker;
  const spawn = (): Promise<void> =>
    new Promise<void>((ready, failed) => {
      const w = new Worker(code, { eval: true, workerData: cfg, env: {} });
      current = w;
      let up = false;
      w.on("message", (m: ResponderMessage) => {
        if (m.kind === "ready") {
          up = true;
          ready();
        } else if (m.kind === "log") log[m.level](m.fields, m.msg);
      });
      w.on("error", (e) => log.error({ err: String(e) }, "responders thread failed"));
      w.on("exit", (code) => {
        if (stopping) return;
        if (!up) return failed(new Error(`responders thread exited (${code}) before it answered`));
        log.error({ code }, "responders thread exited; starting it again");
        setTimeout(
          () => void spawn().catch((e: unknown) => log.error({ err: String(e) }, "responders restart failed")),
          RESTART_MS,
        );
      });
    });
  await spawn();
  return {
    async stop() {
      stopping = true;
      const w = current;
      const stopped = new Promise<void>((ok) => {
        w.on("message", (m: ResponderMessage) => m.kind === "stopped" && ok());
        w.on("exit", () => ok());
      });
      w.postMessage("stop");
      await stopped;
      await w.terminate();
    },
  };
}
