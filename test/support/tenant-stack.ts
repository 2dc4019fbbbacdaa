import { Redis } from "ioredis";
import { expect, inject } from "vitest";
import { runsMain } from "../../cli/runs/program.ts";
import {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from "../../platform/control-plane-processes.ts";
import { DEFAULT_PROOF, proofConfig } from "../../proof/scenario-config.ts";

type TenantInput = NonNullable<ControlPlaneOptions["config"]["tenants"]>[number];

/**
 * Every real service for one tenant of the e2e tests (worker versions, deploys, upgrades, maps): the
 * file's Redis DB flushed, the proof's base config (its operator token), and the tenant's token.
 */
export async function startTenantStack(o: {
  readonly db: number;
  readonly controlPlaneId: string;
  readonly token: string;
  readonly tenant: TenantInput;
}): Promise<ControlPlane> {
  const redis = new Redis(inject("redisUrl"), { db: o.db });
  await redis.flushdb();
  redis.disconnect();
  const base = proofConfig({ ...DEFAULT_PROOF, parallel: 1 });
  return startControlPlane({
    natsUrl: inject("natsUrl"),
    redisUrl: `${inject("redisUrl")}/${o.db}`,
    config: {
      ...base,
      controlPlaneId: o.controlPlaneId,
      tenants: [o.tenant],
      tokens: { ...base.tokens, [o.token]: { role: "tenant", tenantId: o.tenant.tenantId } },
    },
  });
}

/** Runs a `drover` command in-process as `token` against `apiUrl`; it must exit 0; answers its JSON. */
export async function droverJson<T>(apiUrl: string, token: string, argv: readonly string[]): Promise<T> {
  let out = "";
  const env = { DROVER_API_URL: apiUrl, DROVER_TOKEN: token };
  const io = { out: (t: string) => (out += t), err: (t: string) => (out += t), env };
  expect(await runsMain([...argv, "-o", "json"], io), out).toBe(0);
  return JSON.parse(out) as T;
}
