import type { HostStrategy } from "../../platform/hosts/types.ts";

/** Gates a test puts in front of a real host strategy's starts. */
export interface StartGates {
  /** Each cold `start` is counted by `onStart`, then waits for `held`. */
  readonly cold?: { readonly held: Promise<void>; readonly onStart: () => void };
  /** A pooled start (`startPooled`) made while `holds()` is counted by `onStart`, then waits for `held`. */
  readonly pooled?: { readonly held: Promise<void>; readonly holds: () => boolean; readonly onStart?: () => void };
  /** `canBind` answers false: no member can be claimed here. */
  readonly noBind?: boolean;
}

/** The real strategy behind `gates`; everything else (binds, kills) passes through to it. */
export const gateStarts =
  (gates: StartGates) =>
  (s: HostStrategy): HostStrategy =>
    new Proxy(s, {
      get(t, k) {
        if (gates.noBind && k === "canBind") return () => false;
        const v = Reflect.get(t, k, t) as unknown;
        if (typeof v !== "function") return v;
        const call = (a: unknown[]) => (v as (...x: unknown[]) => unknown).apply(t, a);
        const { cold, pooled } = gates;
        if (k === "start" && cold)
          return async (...a: unknown[]) => {
            cold.onStart();
            await cold.held;
            return call(a);
          };
        if (k === "startPooled" && pooled)
          return async (...a: unknown[]) => {
            if (pooled.holds()) {
              pooled.onStart?.();
              await pooled.held;
            }
            return call(a);
          };
        return (...a: unknown[]) => call(a);
      },
    });
