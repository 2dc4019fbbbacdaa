import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  ApiextensionsV1Api,
  KubernetesObjectApi,
  loadAllYaml,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { isApiCode } from "../lib/api-errors.ts";

export const GATEWAY_CLASS = "drover-local";
export const GATEWAY_CONTROLLER = "drover.dev/local-gateway";

/**
 * Creates every object in `<gatewayApiDir>/config/crd/standard/*.yaml` (the CRDs and the
 * safe-upgrades ValidatingAdmissionPolicy shipped with them) as the module publishes them, waits
 * until every CRD is Established, then creates the `drover-local` GatewayClass served by the local
 * gateway. Objects that already exist are left alone. Throws on any other API error or after 60 s.
 */
export async function applyGatewayApi(kc: KubeConfig, gatewayApiDir: string): Promise<string[]> {
  const dir = join(gatewayApiDir, "config/crd/standard");
  const client = KubernetesObjectApi.makeApiClient(kc);
  const objects: { file: string; obj: KubernetesObject }[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort()) {
    for (const obj of loadAllYaml(await readFile(join(dir, file), "utf8")) as (KubernetesObject | null)[])
      if (obj?.kind) objects.push({ file, obj });
  }
  // Independent objects: create them concurrently (CRD creation is the slow part of start-up).
  await Promise.all(
    objects.map(async ({ file, obj }) => {
      try {
        await client.create(obj);
      } catch (err) {
        if (!isApiCode(err, 409))
          throw new Error(`creating ${obj.kind} ${obj.metadata?.name} from ${file}: ${String(err)}`);
      }
    }),
  );
  const crds = objects
    .filter(({ obj }) => obj.kind === "CustomResourceDefinition")
    .map(({ obj }) => obj.metadata?.name ?? "");
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + 60_000;
  for (const name of crds) {
    for (;;) {
      const crd = await ext.readCustomResourceDefinition({ name });
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    await client.create({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: GATEWAY_CLASS },
      spec: {
        controllerName: GATEWAY_CONTROLLER,
        description: "drover's local gateway (test and developer infrastructure)",
      },
    } as KubernetesObject);
  } catch (err) {
    if (!isApiCode(err, 409)) throw err;
  }
  return crds;
}
