import type { V1DeleteOptions, V1ObjectMeta } from "@kubernetes/client-node";
import type { ErrorCode } from "../../../contracts/index.ts";
import { apiFailure } from "./api-errors.ts";
import { sameIdentity } from "./spec.ts";

export interface Obj {
  metadata?: V1ObjectMeta;
}

export type Ensured<T> =
  | { readonly kind: "created" | "adopted"; readonly obj: T; readonly uid: string }
  | { readonly kind: "failed"; readonly code: ErrorCode; readonly detail: string };

/**
 * Creates an object, or adopts the existing one of the same name only when its identity labels and
 * identity annotation are this runtime's (`sameIdentity`); anything else with that name is another
 * owner's and yields `host-identity-collision` (it is never modified or deleted). A 404 on create
 * (namespace or CRD missing) yields `onMissing`; other API failures `host-creation-failed`.
 */
export async function ensureObject<T extends Obj>(
  what: string,
  expected: { labels: Record<string, string>; annotations: Record<string, string> },
  create: () => Promise<T>,
  read: () => Promise<T>,
  onMissing: ErrorCode = "host-creation-failed",
): Promise<Ensured<T>> {
  // Two rounds: an object that exists at create time but is gone at read time is created again.
  for (let round = 0; round < 2; round++) {
    try {
      const obj = await create();
      return { kind: "created", obj, uid: obj.metadata?.uid ?? "" };
    } catch (e) {
      const f = apiFailure(e);
      if (f?.code === 404) return { kind: "failed", code: onMissing, detail: `create ${what}: ${f.message}` };
      if (f?.code !== 409)
        return {
          kind: "failed",
          code: "host-creation-failed",
          detail: `create ${what}: ${f ? `${f.code} ${f.message}` : String(e)}`,
        };
    }
    let existing: T;
    try {
      existing = await read();
    } catch (e) {
      if (apiFailure(e)?.code === 404) continue;
      return { kind: "failed", code: "host-creation-failed", detail: `read existing ${what}: ${String(e)}` };
    }
    if (!sameIdentity(expected, existing.metadata)) {
      return {
        kind: "failed",
        code: "host-identity-collision",
        detail: `${what} exists (uid ${existing.metadata?.uid}) with another identity; labels ${JSON.stringify(existing.metadata?.labels ?? {})}`,
      };
    }
    return { kind: "adopted", obj: existing, uid: existing.metadata?.uid ?? "" };
  }
  return { kind: "failed", code: "host-creation-failed", detail: `create ${what}: it kept appearing and disappearing` };
}

/**
 * Deletes exactly the object with `uid` (the UID and grace period go in the body: kube-apiserver
 * ignores query parameters when a DeleteOptions body is present). 404 (gone) and 409 (the name now
 * belongs to another object) both mean "ours is not there to delete" and resolve quietly; other
 * failures reject.
 */
export async function deleteExact(
  del: (body: V1DeleteOptions) => Promise<unknown>,
  uid: string,
  graceSeconds?: number,
): Promise<"deleted" | "absent"> {
  try {
    await del({
      preconditions: { uid },
      propagationPolicy: "Background",
      ...(graceSeconds === undefined ? {} : { gracePeriodSeconds: graceSeconds }),
    });
    return "deleted";
  } catch (e) {
    const code = apiFailure(e)?.code;
    if (code === 404 || code === 409) return "absent";
    throw e;
  }
}
