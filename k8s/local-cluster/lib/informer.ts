import {
  ListWatch,
  Watch,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from "@kubernetes/client-node";
import type { Logger } from "./log.ts";

/** A list+watch cache that keeps itself running: see {@link startInformer}. */
export interface Informer<T extends KubernetesObject> {
  /** Objects currently known (after the first list, the full set matching the selectors). */
  list(): readonly T[];
  stop(): Promise<void>;
}

export interface InformerOptions<T extends KubernetesObject> {
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Called for every add, update and delete (delete passes the last known object). */
  readonly onChange: (kind: "add" | "update" | "delete", obj: T) => void;
  readonly log: Logger;
}

/**
 * Starts a ListWatch on `path` and resolves once the first list has been delivered and the watch
 * is open. The client's ListWatch handles 410 Gone by re-listing but stops for good on any other
 * error (and reports a failed list as an error event, not a rejection); here it is restarted after
 * a short backoff, so a daemon survives an API server restart. Rejects when the first list has not
 * succeeded within `firstListTimeoutMs` (default 30 s).
 */
export async function startInformer<T extends KubernetesObject>(
  kc: KubeConfig,
  opts: InformerOptions<T> & { firstListTimeoutMs?: number },
): Promise<Informer<T>> {
  let listed = false;
  const list = async (): Promise<KubernetesListObject<T>> => {
    const l = await opts.list();
    listed = true;
    return l;
  };
  const lw = new ListWatch<T>(opts.path, new Watch(kc), list, false, opts.labelSelector, opts.fieldSelector);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let lastError: unknown;
  lw.on("add", (o) => opts.onChange("add", o));
  lw.on("update", (o) => opts.onChange("update", o));
  lw.on("delete", (o) => opts.onChange("delete", o));
  lw.on("error", (err) => {
    lastError = err;
    if (stopped || !listed) return;
    opts.log.warn("watch failed; restarting", { path: opts.path, err });
    timer = setTimeout(() => {
      lw.start().catch(() => undefined);
    }, 500);
  });
  const deadline = Date.now() + (opts.firstListTimeoutMs ?? 30_000);
  for (;;) {
    await lw.start();
    if (listed) break;
    if (Date.now() > deadline) throw new Error(`first list of ${opts.path} failed: ${String(lastError)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    list: () => lw.list(),
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await lw.stop();
    },
  };
}
