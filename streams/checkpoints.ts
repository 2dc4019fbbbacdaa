/**
 * Where a projection remembers the stream sequence it has applied up to. Redis and MongoDB
 * implementations live with the services that own those read models; the contract is the same:
 * `load` returns 0 for a projection never run, `save` overwrites (a rebuild saves 0).
 * Store the checkpoint in the same write as the read model when the backend allows it.
 */
export interface CheckpointStore {
  load(projection: string): Promise<number>;
  save(projection: string, seq: number): Promise<void>;
}

/** An in-memory checkpoint store for tests and single-process tools; lost on restart. */
export function memoryCheckpointStore(
  initial: Record<string, number> = {},
): CheckpointStore & { readonly saved: ReadonlyMap<string, number> } {
  const saved = new Map(Object.entries(initial));
  return {
    saved,
    load: async (p) => saved.get(p) ?? 0,
    save: async (p, seq) => {
      saved.set(p, seq);
    },
  };
}
