import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from "@kubernetes/client-node";
import { isApiCode } from "../lib/api-errors.ts";
import { GROUP } from "./api-types.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** JSON with object keys sorted, so a status read back from the server compares equal to ours. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
}

export type StatusTarget =
  | { readonly plural: "gatewayclasses"; readonly name: string }
  | { readonly plural: "gateways" | "httproutes" | "grpcroutes"; readonly namespace: string; readonly name: string };

/**
 * Writes status subresources, skipping a write when the object already carries exactly that status
 * (or we wrote it last). A 404 (object deleted meanwhile) is not an error; other failures reject
 * and the next reconcile retries.
 */
export class StatusWriter {
  private readonly written = new Map<string, string>();
  constructor(private readonly custom: CustomObjectsApi) {}

  async write(target: StatusTarget, current: unknown, status: unknown): Promise<void> {
    const key = `${target.plural}/${"namespace" in target ? target.namespace : ""}/${target.name}`;
    const next = canonical(status);
    if (canonical(current ?? {}) === next || this.written.get(key) === next) return;
    const body = { status };
    try {
      if (target.plural === "gatewayclasses") {
        await this.custom.patchClusterCustomObjectStatus(
          { group: GROUP, version: "v1", plural: target.plural, name: target.name, body },
          mergePatch,
        );
      } else {
        await this.custom.patchNamespacedCustomObjectStatus(
          { group: GROUP, version: "v1", plural: target.plural, namespace: target.namespace, name: target.name, body },
          mergePatch,
        );
      }
      this.written.set(key, next);
    } catch (err) {
      if (!isApiCode(err, 404)) throw err;
    }
  }
}
