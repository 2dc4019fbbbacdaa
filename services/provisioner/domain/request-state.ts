import type { DataOf, DroverEvent, Reason, TenantId } from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";

export type ScaleOutEvent = Extract<DroverEvent, { type: `scaleout.${string}` }>;

export type RequestStatus = "none" | "requested" | "fulfilled" | "rejected" | "expired" | "cancelled";

/** One scale-out request as its own events tell it (drover.scaleout.<tenant>.<requestId>.*). */
export interface RequestState {
  readonly status: RequestStatus;
  readonly request?: DataOf<"scaleout.requested">;
  readonly tenantId?: TenantId;
  /** eventId of the `requested` event: the causation of everything the provisioner writes for it. */
  readonly requestedEventId?: string;
  /** Every `observed`, in order: one per provisioner attempt (a redelivery after a crash adds one). */
  readonly observations: readonly { readonly seq: number; readonly provisionerInstanceId: string }[];
  readonly fulfilledBy?: string;
  readonly rejectedFor?: Reason;
  /** Stream sequence of the last event: the expectation of the next append. */
  readonly lastSeq: number;
}

export const initialRequestState = (): RequestState => ({ status: "none", observations: [], lastSeq: 0 });

export const isTerminal = (s: RequestState): boolean => s.status !== "none" && s.status !== "requested";

/**
 * Folds one event of the request. The first `requested` wins (a producer may publish a duplicate);
 * the first terminal event wins too, so a late duplicate can never reopen or change an outcome.
 */
export function evolveRequest(s: RequestState, seq: number, e: ScaleOutEvent): RequestState {
  const at = { ...s, lastSeq: Math.max(s.lastSeq, seq) };
  switch (e.type) {
    case "scaleout.requested":
      return s.request
        ? at
        : {
            ...at,
            status: s.status === "none" ? "requested" : s.status,
            request: e.data,
            tenantId: e.tenantId,
            requestedEventId: e.eventId,
          };
    case "scaleout.observed":
      return { ...at, observations: [...s.observations, { seq, provisionerInstanceId: e.data.provisionerInstanceId }] };
    case "scaleout.fulfilled":
      return isTerminal(s) ? at : { ...at, status: "fulfilled", fulfilledBy: e.data.runtimeInstanceId };
    case "scaleout.rejected":
      return isTerminal(s) ? at : { ...at, status: "rejected", rejectedFor: e.data.reason };
    case "scaleout.expired":
      return isTerminal(s) ? at : { ...at, status: "expired" };
    case "scaleout.cancelled":
      return isTerminal(s) ? at : { ...at, status: "cancelled" };
    default:
      return assertNever(e, "scale-out event");
  }
}
