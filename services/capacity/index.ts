/** capacity service: the projection of runtime events and heartbeats into the Redis capacity view. */
export { startCapacityProjection, type CapacityProjection, type CapacityProjectionDeps } from "./shell/projection.ts";
