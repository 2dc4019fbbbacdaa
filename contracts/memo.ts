/**
 * A value built on its first use and kept: for schemas that a process may never use. zod builds a
 * schema when its constructor is called, so every schema written at a module's top level is built
 * when the module is imported, by every process that imports the contracts. The 78 event schemas
 * (define-event.ts) were ~25 ms of the ~0.12 s of CPU a runtime's start took to its configuration
 * check on a quiet core (session 35). A build that throws is not kept: the next call builds again.
 */
export function memo<T>(build: () => T): () => T {
  let built = false;
  let value: T | undefined;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
