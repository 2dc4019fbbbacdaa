import type { Logger } from "pino";
import type { CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import type { DroverConfig, RuntimeCommand, RuntimeCommandResult, Transport } from "../../../contracts/index.ts";
import type { CapacityViewStore } from "../../../platform/capacity-view.ts";
import type { EnvelopeContext } from "../../../platform/envelope.ts";
import type { Reservations } from "../../../platform/reservations.ts";
import type { TenantClaims } from "../../../platform/tenant-claims.ts";
import type { EventStore, StreamLayout } from "../../../streams/index.ts";
import type { RunIndex } from "./run-index.ts";

/** Everything the admission shell touches, injected (tests replace the clock, ids and the command sender). */
export interface AdmissionDeps {
  readonly config: DroverConfig;
  /** Told each time the queue liveness guard re-plans a stalled queue (the `queue-stalled` metric). */
  readonly onQueueStalled?: (tenantId: string) => void;
  readonly layout: StreamLayout;
  readonly store: EventStore;
  readonly index: RunIndex;
  readonly view: CapacityViewStore<CapacityDescriptor>;
  readonly reservations: Reservations;
  /** Tenant quota claims shared by admission replicas (tenant-quota.ts); without them the quota is per replica. */
  readonly claims?: TenantClaims;
  readonly env: EnvelopeContext;
  readonly send: (
    endpoint: string,
    transport: Transport,
    command: RuntimeCommand,
    token: string,
    timeoutMs: number,
  ) => Promise<RuntimeCommandResult>;
  readonly commandTokenFor: (runtimeInstanceId: string) => string;
  readonly sha256: (s: string) => string;
  readonly log: Logger;
}
