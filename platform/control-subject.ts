import type { StreamLayout } from "../streams/index.ts";

/**
 * The request subject of a control-plane operation on a service, e.g.
 * `drover-ctl.<controlPlaneId>.capacity.rebuild`. It follows the event prefix of the layout
 * (`drover` → `drover-ctl`, `<tag>.drover` → `<tag>.drover-ctl`) so isolated runs never answer each other.
 */
export function controlSubject(
  layout: StreamLayout,
  controlPlaneId: string,
  service: string,
  operation: string,
): string {
  return `${layout.eventPrefix}-ctl.${controlPlaneId}.${service}.${operation}`;
}
