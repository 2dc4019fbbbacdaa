import type { JetStreamClient } from "@nats-io/jetstream";
import { follow } from "../platform/follow.ts";

/**
 * Waits until `size` warm pool members are ready (`runtime.pool-member-ready` in the log), i.e. the
 * pool the provisioner fills at start-up is warm before the proof submits its first run, as a pool
 * is before any incident of a running control plane. Returns how long it waited, ms; throws after `timeoutMs`.
 */
export async function waitForWarmPool(
  js: JetStreamClient,
  layout: { readonly eventStream: string; readonly eventPrefix: string },
  size: number,
  timeoutMs: number,
): Promise<number> {
  const t0 = Date.now();
  let ready = 0;
  let done!: () => void;
  const full = new Promise<void>((ok) => (done = ok));
  const f = await follow(
    js,
    { stream: layout.eventStream, filters: [`${layout.eventPrefix}.runtime.*.pool-member-ready`] },
    () => {
      if (++ready >= size) done();
    },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      full,
      new Promise<never>((_, fail) => {
        timer = setTimeout(
          () => fail(new Error(`${ready} of ${size} warm pool members ready after ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
    return Date.now() - t0;
  } finally {
    clearTimeout(timer);
    await f.stop();
  }
}
