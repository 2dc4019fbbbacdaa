import type { Clock } from "../../../platform/clock.ts";
import type { Credential, DroverConfig } from "../../../contracts/index.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { StepCacheStore } from "../../../platform/step-cache-store.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { TokenTable } from "../domain/access.ts";
import type { CapacityReader } from "./capacity-reader.ts";
import type { EventFeed } from "./event-feed.ts";
import type { IdGenerator } from "./ids.ts";
import type { OpenRunsCounter } from "./open-runs-projection.ts";
import type { ReadModels } from "./read-models.ts";

/**
 * Everything the API's shell and routes use, injected so tests control time, ids and the stores.
 * `openRuns` is absent when no quota is enforced at submission (admission still enforces it);
 * `readModels` is absent without MONGO_URL (the forensics queries then answer 503).
 */
export interface ApiDeps {
  readonly config: DroverConfig;
  readonly tokens: TokenTable;
  readonly layout: StreamLayout;
  readonly store: EventStore;
  readonly feed: EventFeed;
  readonly capacity: CapacityReader;
  readonly openRuns?: OpenRunsCounter;
  readonly readModels?: ReadModels;
  /** The object store of large outputs (a run output above the inline limit is read back from it). */
  readonly outputs?: OutputStore;
  /** The step cache index (docs/step-cache.md "Inspect and clear"); main.ts always sets it. */
  readonly stepCache?: StepCacheStore;
  readonly clock: Clock;
  readonly newId: IdGenerator;
  /** This API process, as recorded in the `writer` of every event it appends. */
  readonly instanceId: string;
}

export type { Credential };
