import type { z } from "zod";
import { EXEC_EVENTS } from "./events-exec.ts";
import { FORENSICS_EVENTS } from "./events-forensics.ts";
import { RUN_EVENTS } from "./events-run.ts";
import { RUNTIME_EVENTS } from "./events-runtime.ts";
import { SCALEOUT_EVENTS } from "./events-scaleout.ts";
import { SCHEDULE_EVENTS } from "./events-schedule.ts";
import { FLOWKEY_EVENTS } from "./events-flowkey.ts";
import { QUOTA_EVENTS } from "./events-quota.ts";
import { WORKER_EVENTS } from "./events-worker.ts";

/** Every event definition in the catalogue (identities-and-events.md "Event catalogue"). */
export const ALL_EVENTS = [
  ...RUN_EVENTS,
  ...EXEC_EVENTS,
  ...SCALEOUT_EVENTS,
  ...RUNTIME_EVENTS,
  ...FORENSICS_EVENTS,
  ...SCHEDULE_EVENTS,
  ...FLOWKEY_EVENTS,
  ...QUOTA_EVENTS,
  ...WORKER_EVENTS,
] as const;
type Def = (typeof ALL_EVENTS)[number];

/** A decoded, validated event of any type; narrow on `type`. */
export type DroverEvent = z.infer<Def["schema"]>;
export type EventType = DroverEvent["type"];
/** The event whose `type` is T. */
export type EventOf<T extends EventType> = Extract<DroverEvent, { type: T }>;
/** Data of the event whose `type` is T. */
export type DataOf<T extends EventType> = EventOf<T>["data"];

export const EVENT_DEFINITIONS: ReadonlyMap<string, Def> = new Map(ALL_EVENTS.map((d) => [d.type, d]));
export const EVENT_TYPES = ALL_EVENTS.map((d) => d.type) as EventType[];
