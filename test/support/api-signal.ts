import { createHash } from "node:crypto";
import { canonicalJson } from "../../aggregates/step-inputs.ts";
import { runRef, type StoredEvent } from "../../streams/index.ts";
import { testEvent, type ControlPlaneDouble } from "./control-plane-double.ts";

/**
 * Appends `run.signal-received` as the API does (writer service `api`, conditional on the run's last
 * sequence): host tests that play the control plane signal a wait this way. It proves nothing about
 * the API (its rules are tested through it in runtime-waits.host.test.ts); only the runtime's side.
 */
export async function signalAsApi(
  cp: ControlPlaneDouble,
  tenantId: string,
  sharedRunId: string,
  name: string,
  payload: unknown,
): Promise<StoredEvent> {
  const ref = runRef(tenantId, sharedRunId);
  const digest = createHash("sha256").update(canonicalJson(payload)).digest("hex");
  const event = {
    ...testEvent("run.signal-received", { name, by: `tenant:${tenantId}`, payload, payloadDigest: digest }, tenantId),
    writer: { service: "api", instanceId: "host-test-api" },
  } as ReturnType<typeof testEvent>;
  for (;;) {
    const last = await cp.store.lastSeq(ref);
    try {
      const { seq } = await cp.store.append(ref, event, { expectedSeq: last });
      const stored = (await cp.store.read(ref)).events.find((e) => e.seq === seq);
      if (!stored) throw new Error(`signal at ${seq} not read back`);
      return stored;
    } catch (e) {
      if ((e as { code?: string }).code !== "version-conflict") throw e;
    }
  }
}
