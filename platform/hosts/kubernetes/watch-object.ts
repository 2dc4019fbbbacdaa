import { Watch, type KubeConfig } from "@kubernetes/client-node";

/** What a decision sees: the listed object (`LISTED`, undefined when absent) or a watch event. */
export type ObjectEvent<T> =
  | { readonly type: "LISTED"; readonly obj: T | undefined }
  | { readonly type: "ADDED" | "MODIFIED" | "DELETED"; readonly obj: T };

export interface WatchTarget<T> {
  /** Collection path, e.g. `/api/v1/namespaces/ns/pods`. */
  readonly path: string;
  readonly name: string;
  /** Lists the collection with `fieldSelector=metadata.name=<name>`. */
  readonly list: (fieldSelector: string) => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
}

type Listed<T> = Awaited<ReturnType<WatchTarget<T>["list"]>>;

/**
 * Follows one named object until `decide` returns a value, and resolves with it; resolves
 * `{ timeout: true }` when `deadline` (epoch ms) passes or `signal` aborts first. Starts from a list
 * (so the current state counts) — `listed`, when the caller has just made that list itself — then
 * watches from the list's resourceVersion; when the watch ends or reports an error (410 Gone
 * included) it lists again. Event-driven: no polling. List errors reject (the caller maps them to
 * its reason).
 */
export async function followObject<T, R>(
  kc: KubeConfig,
  target: WatchTarget<T>,
  decide: (e: ObjectEvent<T>) => R | undefined,
  deadline: number,
  signal?: AbortSignal,
  listed?: Listed<T>,
): Promise<R | { timeout: true }> {
  const fieldSelector = `metadata.name=${target.name}`;
  let quickEnds = 0;
  let first = listed;
  while (Date.now() < deadline && !signal?.aborted) {
    const list = first ?? (await target.list(fieldSelector));
    first = undefined;
    const now = decide({ type: "LISTED", obj: list.items[0] });
    if (now !== undefined) return now;
    const began = Date.now();
    const r = await watchOnce(kc, target.path, fieldSelector, list.metadata?.resourceVersion, decide, deadline, signal);
    if (r !== undefined) return r;
    // A watch that keeps ending at once (refused, or the server is shedding load) must not turn this
    // into a busy list loop: back off (50 ms doubling to 1 s) before listing again.
    quickEnds = Date.now() - began < 100 ? quickEnds + 1 : 0;
    if (quickEnds > 0)
      await new Promise((ok) =>
        setTimeout(ok, Math.min(1000, 50 * 2 ** (quickEnds - 1), Math.max(0, deadline - Date.now()))),
      );
  }
  return { timeout: true };
}

// One watch connection: resolves with a decision, `{ timeout }` at the deadline, or undefined when
// the watch ended without one (the caller re-lists).
async function watchOnce<T, R>(
  kc: KubeConfig,
  path: string,
  fieldSelector: string,
  resourceVersion: string | undefined,
  decide: (e: ObjectEvent<T>) => R | undefined,
  deadline: number,
  signal?: AbortSignal,
): Promise<R | { timeout: true } | undefined> {
  let controller: AbortController | undefined;
  let settle: (v: R | { timeout: true } | undefined) => void = () => undefined;
  const result = new Promise<R | { timeout: true } | undefined>((ok) => {
    settle = ok;
  });
  const timer = setTimeout(() => settle({ timeout: true }), Math.max(0, deadline - Date.now()));
  const onAbort = (): void => settle({ timeout: true });
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    controller = await new Watch(kc).watch(
      path,
      { fieldSelector, allowWatchBookmarks: true, ...(resourceVersion ? { resourceVersion } : {}) },
      (type: string, obj: T) => {
        // ERROR (e.g. 410 Gone: our resourceVersion is too old) ends this watch; the caller re-lists.
        if (type === "ERROR") {
          settle(undefined);
          return;
        }
        if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") return;
        const r = decide({ type, obj });
        if (r !== undefined) settle(r);
      },
      () => settle(undefined),
    );
    return await result;
  } catch {
    // The watch request itself failed (connection refused, 5xx): re-list, which surfaces a lasting failure.
    return undefined;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    controller?.abort();
  }
}
