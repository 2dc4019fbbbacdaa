import type { DroverEvent } from "../../../contracts/index.ts";
import type { Detail, Refs } from "../../../contracts/read-models.ts";

/** What a row shows of one event: a line for humans, flat facts, and the ids to find it by. */
export interface Description {
  readonly summary: string;
  readonly detail: Detail;
  readonly refs: Refs;
}

/** The events of one aggregate (`run`, `exec`, …). */
export type Of<P extends string> = Extract<DroverEvent, { type: `${P}.${string}` }>;
export const reason = (r: { code: string; detail: string }) => ({ reasonCode: r.code, reasonDetail: r.detail });
export const desc = (summary: string, detail: Detail = {}, refs: Refs = {}): Description => ({
  summary,
  detail,
  refs,
});
