/**
 * Holds publishes until the event loop's check phase (`setImmediate`), then sends them all in one
 * synchronous run. The NATS client flushes its outbound buffer in a microtask queued by the first
 * publish after a flush, so publishes made while many executions resume from one socket read (each
 * continuing through its own chain of microtasks) otherwise leave in several socket writes; sent
 * from one callback they share one buffer, one write syscall, and one read on the server. Nothing
 * about any one publish changes: each is still its own conditional request awaiting its own ack,
 * and a caller that awaits its ack before the next publish (every journal does) keeps its order.
 * The cost is one turn of the event loop per publish (microseconds when idle).
 */
export type PublishGate = <T>(send: () => Promise<T>) => Promise<T>;

export function publishGate(): PublishGate {
  let held: (() => void)[] = [];
  const release = () => {
    const now = held;
    held = [];
    for (const go of now) go();
  };
  return (send) =>
    new Promise((ok, fail) => {
      if (held.length === 0) setImmediate(release);
      held.push(() => send().then(ok, fail));
    });
}

/** No holding: each publish goes out when it is made. */
export const immediatePublish: PublishGate = (send) => send();
