import type { ControlPlane, ServiceName } from "../platform/control-plane-processes.ts";

/** One service replica the chaos loop SIGKILLed, and when (ms since the loop started). */
export interface ChaosKill {
  readonly service: ServiceName;
  readonly replica: number;
  readonly atMs: number;
  /** How long the restart took to return (the api: until it listened again). */
  readonly restartMs: number;
}

export interface Chaos {
  /** Ends the loop after the kills in progress (whose replicas are restarted first); the kills it made. */
  stop(): Promise<readonly ChaosKill[]>;
}

/** A small deterministic generator (mulberry32): the same seed kills the same replicas in the same order. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The chaos loop of the replicated proof (issue 16): every `everyMs`, the next service in turn (so
 * every service is hit) loses a random replica to SIGKILL, which is restarted `downMs` later. At most
 * one replica of a service is down at a time (its next kill waits for its restart), so each service
 * always has another one running; the cadence does not wait for the restarts of the others. Before,
 * every turn waited for the last restart too: under load a turn took ~5 s instead of 2, and a proof
 * whose runs took 30 s ended before the last service's turn (CI, session 18: forensics never hit).
 */
export function startChaos(
  cp: ControlPlane,
  services: readonly ServiceName[],
  o: { readonly everyMs: number; readonly downMs: number; readonly seed: number },
): Chaos {
  const rand = seeded(o.seed);
  const kills: ChaosKill[] = [];
  const t0 = Date.now();
  let stopped = false;
  let wake: () => void = () => undefined;
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      wake = () => {
        clearTimeout(t);
        r();
      };
    });
  /** Each service's kill and restart in progress. */
  const down = new Map<ServiceName, Promise<void>>();
  const killAndRestart = async (service: ServiceName, replica: number): Promise<void> => {
    const atMs = Date.now() - t0;
    await cp.kill(service, replica);
    await new Promise((r) => setTimeout(r, o.downMs));
    const t = Date.now();
    await cp.restart(service, replica);
    kills.push({ service, replica, atMs, restartMs: Date.now() - t });
  };
  const loop = (async () => {
    for (let turn = 0; ; turn++) {
      await sleep(o.everyMs);
      if (stopped) return;
      const service = services[turn % services.length]!;
      await down.get(service); // its last replica killed is back before another goes
      if (stopped) return;
      const replica = Math.floor(rand() * cp.replicasOf(service));
      const pending = killAndRestart(service, replica);
      pending.catch(() => undefined); // handled: its failure surfaces where it is awaited (next turn, stop)
      down.set(service, pending);
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await loop;
      await Promise.all(down.values());
      return kills;
    },
  };
}
