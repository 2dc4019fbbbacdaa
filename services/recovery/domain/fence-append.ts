import type { DroverEvent } from "../../../contracts/index.ts";

/**
 * Whether a fence whose kill has proven the boundary may still append `runtime fenced` after its
 * conditional append met `version-conflict`: yes when everything appended to the runtime since the
 * sequence the fence was decided on is a host observation (`runtime host-exited`) of the incarnation
 * it killed — evidence that host went away (its container exited, its Pod failed, its Pod was
 * deleted: the kill's own effect, which the provisioner's watch records meanwhile), which cannot
 * change the decision. Anything else (another replica's fence or plan, a retirement, a different
 * incarnation's fact) keeps the conflict: the next pass decides again from the new history.
 */
export function fenceStillDecided(appendedSince: readonly DroverEvent[], hostIncarnation: string): boolean {
  return appendedSince.every((e) => e.type === "runtime.host-exited" && e.data.hostIncarnation === hostIncarnation);
}
