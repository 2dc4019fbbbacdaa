import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { isDroverError, RuntimeInstanceId, TenantId, TenantSettings, WorkerVersion } from "../../contracts/index.ts";
import { sourceWorker, workerVersionOfFile } from "../../platform/hosts/worker-builds.ts";
import { deployCurrentBuilds, recordDeploy, type ProvisionerDeps } from "../../services/provisioner/index.ts";
import { runtimeRef, workerDeploysRef, type EventStore } from "../../streams/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

const V1 = WorkerVersion.parse("1".repeat(64));
const V2 = WorkerVersion.parse("2".repeat(64));
const DIR = resolve(import.meta.dirname, "../..", ".run", `wd-int-${randomUUID().slice(0, 8)}`);
const MODULE = join(DIR, "worker.ts");

/** A store whose first two reads of the deploys aggregate wait for each other: both deployers decide on the same state. */
function barrierStore(store: EventStore): EventStore & { conflicts: number } {
  let waiting: (() => void) | undefined;
  let reads = 0;
  const out = {
    ...store,
    conflicts: 0,
    append: async (...args: Parameters<EventStore["append"]>) => {
      try {
        return await store.append(...args);
      } catch (e) {
        if (isDroverError(e, "version-conflict")) out.conflicts++;
        throw e;
      }
    },
    read: async (...[ref, o]: Parameters<EventStore["read"]>) => {
      const h = await store.read(ref, o);
      if (ref.aggregate === "worker" && ++reads <= 2) {
        if (waiting) waiting();
        else await new Promise<void>((r) => (waiting = r));
      }
      return h;
    },
  };
  return out;
}

/**
 * Deploys as events (docs/worker-versions.md) against a real nats-server: the provisioner's
 * conditional `worker.deployed` under a race, and the API's deploy request answered by it.
 */
describe("worker deploys against a real nats-server: racing deploys conflict and are looked at, a request is answered", () => {
  let fx: ApiFixture;
  const deps = (store: EventStore, id: string): ProvisionerDeps => ({
    store,
    layout: fx.layout,
    // Only whether process hosts are enabled is read here: no host is ever started.
    strategies: new Map([["process", undefined as never]]),
    instanceId: id,
    natsUrl: inject("natsUrl"),
    clock: { now: () => new Date() },
    newEventId: () => `ev-${randomUUID()}`,
    newSuffix: () => randomUUID().slice(0, 12),
    commandTokenFor: () => "unused",
    probeBudgetMs: 1000,
    killBudgetMs: 1000,
    maxConcurrentHostStartups: 1,
    log: () => undefined,
    tenantSettings: (tenantId) =>
      TenantSettings.parse({ tenantId, isolationMode: "dedicated", worker: { module: MODULE, kinds: ["work"] } }),
    buildWorker: sourceWorker,
  });
  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(MODULE, "export default {};\n");
    fx = await apiFixture(inject("natsUrl"), {
      tenants: [
        { tenantId: TenantId.parse("acme"), isolationMode: "dedicated", worker: { module: MODULE, kinds: ["work"] } },
      ],
    });
  });
  afterAll(async () => {
    await fx?.close();
    rmSync(DIR, { recursive: true, force: true });
  });
  const deploys = async (tenant: string) =>
    (await fx.store.read(workerDeploysRef(tenant))).events.map((e) => ({ seq: e.seq, event: e.event }));

  it("two deployers of different versions deciding on the same state: one conflicts, reads the winner's deploy and records its own after it (previous names the winner)", async () => {
    const store = barrierStore(fx.store);
    const [a, b] = await Promise.all([
      recordDeploy(deps(store, "prov-a"), "t-race", { version: V1 }, ["work"]),
      recordDeploy(deps(store, "prov-b"), "t-race", { version: V2 }, ["work"]),
    ]);
    expect([a, b]).toEqual(["deployed", "deployed"]);
    expect(store.conflicts).toBe(1); // both decided on the empty aggregate; the second append was refused
    const es = await deploys("t-race");
    expect(es.map((e) => e.event.type)).toEqual(["worker.deployed", "worker.deployed"]);
    const [first, second] = es.map((e) => e.event.data as { version: string; previous?: string });
    expect(new Set([first!.version, second!.version])).toEqual(new Set([V1, V2]));
    expect(first!.previous).toBeUndefined();
    expect(second!.previous).toBe(first!.version);
  });

  it("two deployers of the same version: one append; the loser reads it and appends nothing", async () => {
    const store = barrierStore(fx.store);
    const outcomes = await Promise.all([
      recordDeploy(deps(store, "prov-a"), "t-same", { version: V1 }, ["work"]),
      recordDeploy(deps(store, "prov-b"), "t-same", { version: V1 }, ["work"]),
    ]);
    expect(outcomes.sort()).toEqual(["current", "deployed"]);
    expect(store.conflicts).toBe(1);
    expect((await deploys("t-same")).length).toBe(1);
  });

  it("POST /v1/workers/deploy records the request with the credential; the provisioner's check answers it with the version it built; GET /v1/runtimes then shows the older version's runtime draining", async () => {
    // A live runtime of V1, registered later than anything else: by the deployedAt rule it is current.
    const reg = event("runtime.registered");
    const rt = RuntimeInstanceId.parse("rt-acme-wd01");
    await fx.store.append(
      runtimeRef(rt),
      {
        ...reg,
        tenantId: TenantId.parse("acme"),
        data: {
          ...reg.data,
          tenantId: TenantId.parse("acme"),
          worker: { version: V1, deployedAt: "2030-01-01T00:00:00.000Z", pinned: false },
        },
      },
      { expectedSeq: 0 },
    );
    const view = async () => {
      const r = await fx.app.inject({ method: "GET", url: "/v1/runtimes", headers: auth("operator") });
      return (r.json().runtimes as { runtimeInstanceId: string; worker: { draining: boolean } | null }[]).find(
        (x) => x.runtimeInstanceId === rt,
      )!.worker!.draining;
    };
    expect(await view()).toBe(false);
    const d = deps(fx.store, "prov-a");
    let answered = false;
    const checks = (async () => {
      while (!answered) {
        await deployCurrentBuilds(d, ["acme"], "requested");
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const res = await fx.app.inject({
      method: "POST",
      url: "/v1/workers/deploy",
      headers: auth("acme"),
      payload: { waitMs: 10_000 },
    });
    answered = true;
    await checks;
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      outcome: "deployed",
      tenantId: "acme",
      deployed: { version: workerVersionOfFile(MODULE), kinds: ["work"], requestedBy: "tenant:acme", previous: null },
      pendingRequestSeq: null,
    });
    const es = await deploys("acme");
    expect(es.map((e) => e.event.type)).toEqual(["worker.deploy-requested", "worker.deployed"]);
    expect(es[1]!.event.data).toMatchObject({ requestSeq: es[0]!.seq, requestedBy: "tenant:acme" });
    expect(await view()).toBe(true); // the V1 runtime drains: the deployed version is another
    const got = await fx.app.inject({ method: "GET", url: "/v1/workers", headers: auth("acme") });
    expect(got.json().deployed.version).toBe(workerVersionOfFile(MODULE));
    // Nothing pending: another check appends nothing.
    await deployCurrentBuilds(d, ["acme"], "requested");
    expect((await deploys("acme")).length).toBe(2);
  });

  it("a deploy request nobody answers within waitMs is answered 202 requested, still pending", async () => {
    const res = await fx.app.inject({
      method: "POST",
      url: "/v1/workers/deploy?tenant=acme",
      headers: auth("operator"),
      payload: { waitMs: 0 },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ outcome: "requested", pendingRequestSeq: res.json().requestSeq });
    const last = (await deploys("acme")).at(-1)!;
    expect(last.event).toMatchObject({ type: "worker.deploy-requested", data: { requestedBy: "operator:ops" } });
  });
});
