import type { Logger } from "pino";
import { RuntimeFailureIncidentId, type DroverConfig, type HostProvider } from "../../../contracts/index.ts";
import type { EnvelopeContext } from "../../../platform/envelope.ts";
import type { HostStrategy } from "../../../platform/hosts/types.ts";
import type { KickResult } from "../../../platform/nats-auth/kick.ts";
import type { EventStore, StreamLayout } from "../../../streams/index.ts";
import type { RecoveryState } from "./state.ts";

/** Everything the recovery shell touches, injected. */
export interface RecoveryDeps {
  readonly config: DroverConfig;
  readonly layout: StreamLayout;
  readonly store: EventStore;
  readonly state: RecoveryState;
  readonly env: EnvelopeContext;
  /** The host strategy that can kill hosts of this provider (undefined: this replica cannot fence them). */
  readonly hosts: (provider: HostProvider) => HostStrategy | undefined;
  readonly sha256: (s: string) => string;
  /**
   * Disconnects a runtime's live NATS connections (platform/nats-auth/kick.ts), called once its
   * `runtime fenced` is in the log, until none remains (kickUntilGone); absent on an open server
   * (its connections then end at expiry).
   */
  readonly kick?: (runtimeInstanceId: string) => Promise<KickResult>;
  readonly log: Logger;
}

/** One failure of one runtime instance: runtime ids are never reused, so the id determines the incident. */
export const incidentIdOf = (deps: RecoveryDeps, runtimeInstanceId: string): RuntimeFailureIncidentId =>
  RuntimeFailureIncidentId.parse(`inc-${deps.sha256(runtimeInstanceId).slice(0, 24)}`);
