import type { ProvisionerDeps } from "./context.ts";
import { isPoolable } from "./warm-pool.ts";

/** A hold lasts at most this long; the boots then run at least as long before the next hold. */
export const BOOT_HOLD_MAX_MS = 3_000;
/**
 * After a runtime this provisioner published exits, how long the hold waits for its replacement's
 * claim (recovery suspects, fences and asks for it first: ~0.2–1.5 s after the exit at load 15–20).
 */
export const BOOT_HOLD_LOSS_MS = 1_500;
const CHECK_MS = 100;

export interface BootHoldOptions {
  /** Pauses (true) or continues (false) the warm pool members still booting; returns how many. */
  readonly hold: (on: boolean) => number;
  /** A runtime start (a claimed member's bind, a cold host start) is in flight here. */
  readonly busy: () => boolean;
  /** A scale-out waits for a member or a start slot: the booting members are for it, never held. */
  readonly urgent: () => boolean;
  readonly now: () => number;
  /** Calls `check` every `ms` until the returned stop is called (tests drive `check` themselves). */
  readonly every?: (check: () => void, ms: number) => () => void;
}

const everyInterval = (check: () => void, ms: number): (() => void) => {
  const t = setInterval(check, ms);
  return () => clearInterval(t);
};

/**
 * Holds the warm pool's booting members while the runtime starts in flight want the CPU (hosts.md
 * "Warm pool": a refill is background work). A hold begins when a start goes in flight or a runtime
 * this provisioner published exits (its replacement is about to be claimed and bound), unless a
 * scale-out is waiting for a member or no member is booting, and ends once no start is in flight and the last exit is
 * BOOT_HOLD_LOSS_MS old, as soon as a scale-out waits for a member, or after BOOT_HOLD_MAX_MS; the next
 * hold begins no sooner than BOOT_HOLD_MAX_MS after that, so a member's boot is delayed by at most
 * half of any stretch of starts (its start-up deadline is 30 s).
 */
export class BootHold {
  private since: number | undefined;
  private releasedAt = Number.NEGATIVE_INFINITY;
  private lossAt = Number.NEGATIVE_INFINITY;
  private stopChecks: (() => void) | undefined;

  constructor(private readonly o: BootHoldOptions) {}

  /** Whether the boots are held now. */
  get holding(): boolean {
    return this.since !== undefined;
  }

  /** A start went in flight here. */
  readonly started = (): void => this.poke(false);
  /** A runtime this provisioner published exited: its replacement's claim and bind are coming. */
  readonly lost = (): void => this.poke(true);

  /** A start went in flight, or (`loss`) a runtime this provisioner published exited. */
  poke(loss = false): void {
    const now = this.o.now();
    if (loss) this.lossAt = now;
    if (this.since !== undefined || now - this.releasedAt < BOOT_HOLD_MAX_MS || this.o.urgent()) return;
    // Nothing booting, nothing held: no hold begins (and none is kept from beginning at the next poke).
    if (this.o.hold(true) === 0) return;
    this.since = now;
    this.stopChecks = (this.o.every ?? everyInterval)(() => this.check(), CHECK_MS);
  }

  /** Ends the hold once nothing wants the CPU, a scale-out waits for a member, or it lasted its bound. */
  check(): void {
    if (this.since === undefined) return;
    const now = this.o.now();
    const wanted = this.o.busy() || now - this.lossAt < BOOT_HOLD_LOSS_MS;
    if (wanted && !this.o.urgent() && now - this.since < BOOT_HOLD_MAX_MS) return;
    this.release(now);
  }

  /** Continues the booting members now (shutdown). */
  stop(): void {
    if (this.since !== undefined) this.release(this.o.now());
  }

  private release(now: number): void {
    this.stopChecks?.();
    this.stopChecks = undefined;
    this.since = undefined;
    this.releasedAt = now;
    this.o.hold(false);
  }
}

/**
 * The provisioner's hold over the booting members of every strategy that keeps a pool and can hold
 * them (none without a pool: nothing boots, nothing is held); `starts`: the starts in flight
 * (busy-starts.ts); `gate.waiters`: scale-outs waiting for a member or a start slot.
 */
export function bootHoldOf(
  d: Pick<ProvisionerDeps, "strategies" | "clock" | "log">,
  starts: { readonly busy: boolean },
  gate: { readonly waiters: number },
): BootHold {
  return new BootHold({
    hold: (on) => {
      let members = 0;
      for (const s of d.strategies.values()) if (isPoolable(s)) members += s.holdBoots?.(on) ?? 0;
      if (members > 0)
        d.log(on ? "booting warm pool members held" : "booting warm pool members continued", { members });
      return members;
    },
    busy: () => starts.busy,
    urgent: () => gate.waiters > 0,
    now: () => d.clock.now().getTime(),
  });
}
