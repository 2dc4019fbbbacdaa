import { Redis } from "ioredis";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane, type ServiceName } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { DEFAULT_PROOF, proofConfig } from "../../proof/scenario-config.ts";
import { createEventStore, execRef, runtimeRef } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/lib/chromium/chromium";
const TENANT = "t-wait";
const ALICE = "token-wait-alice-0000001"; // name alice, role approver: a resolver
const BOB = "token-wait-bob-000000001"; // name bob: a token of the tenant, not a resolver
const REDIS_DB = 12;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const dag = {
  name: "waits-e2e",
  steps: [
    { id: "draft", kind: "compute", params: { durationMs: 10 } },
    {
      id: "review",
      kind: "wait",
      dependsOn: ["draft"],
      params: {
        name: "approval",
        timeoutMs: 600_000,
        schema: { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"] },
        resolvers: ["role:approver"],
      },
    },
    { id: "publish", kind: "compute", dependsOn: ["review"], when: "steps.review.output.approved" },
  ],
};

/**
 * A wait through every real service and real runtime processes (control-flow.md "Waits"): while the
 * run waits, every control-plane service is SIGKILLed and restarted and then the runtime holding the
 * wait is SIGKILLed; recovery resumes the execution on a replacement; in Chromium the run page of a
 * token that is no resolver shows the wait without buttons (and the API answers that token 403,
 * writing nothing), and the approver's Approve button resolves the wait and the run completes.
 */
describe("a wait survives control-plane restarts and a runtime SIGKILL, and the dashboard resolves it (all services real)", () => {
  let cp: ControlPlane;
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: REDIS_DB });
    await redis.flushdb();
    redis.disconnect();
    const base = proofConfig({ ...DEFAULT_PROOF, parallel: 1 });
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/${REDIS_DB}`,
      mongoUrl: inject("mongoUrl"),
      services: ["capacity", "recovery", "provisioner", "admission", "forensics", "scheduler", "api"],
      config: {
        ...base,
        controlPlaneId: "cp-waits-e2e",
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 1,
            maxConcurrentRunsPerInstance: 2,
            transport: "http",
          },
        ],
        tokens: {
          ...base.tokens,
          [ALICE]: { role: "tenant", tenantId: TENANT, name: "alice", roles: ["approver"] },
          [BOB]: { role: "tenant", tenantId: TENANT, name: "bob" },
        },
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--disable-dev-shm-usage"] });
  }, 120_000);
  // A failure keeps the control plane's service and runtime logs (CI, 2026-12-07: the resume did not come within
  // 120 s at load ~25, and nothing was left to say why).
  let failed = false;
  afterAll(async () => {
    await browser?.close();
    if (failed) console.error(`[waits] failed: the control plane's logs are kept in ${cp?.logDir}`);
    await cp?.stop(failed);
  });

  async function runPage(token: string, id: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${cp.apiUrl}/`);
    await page.fill("#token", token);
    await page.click("#login button");
    await page.waitForSelector("#nav:not([hidden])");
    await page.goto(`${cp.apiUrl}/#/runs/${id}`);
    return page;
  }

  it("the wait is open across every service's restart and the runtime's SIGKILL; a non-resolver gets no buttons and a 403 with no event, the approver's Approve completes the run", async () => {
    onTestFailed(() => {
      failed = true;
    });
    const sub = await apiClient(cp.apiUrl, ALICE).submit(dag as never);
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const id = sub.body.sharedRunId as string;
    const openRun = () =>
      eventually(
        `run ${id} waiting`,
        async () => {
          const r = (await apiClient(cp.apiUrl, ALICE).run(id)).body as Json | undefined;
          return r?.waits?.[0]?.state === "open" ? r : undefined;
        },
        120_000,
      );
    const first = await openRun();
    const executionId = first.executionId as string;

    for (const svc of ["api", "admission", "capacity", "provisioner", "recovery", "forensics", "scheduler"]) {
      await cp.kill(svc as ServiceName);
      await cp.restart(svc as ServiceName);
    }
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const runtime = first.placement.runtimeInstanceId as string;
      const host = (await store.read(runtimeRef(runtime))).events.find((x) => x.event.type === "runtime.host-started");
      if (host?.event.type !== "runtime.host-started" || !host.event.data.pid) throw new Error("no runtime pid");
      process.kill(host.event.data.pid, "SIGKILL");
      await eventually(
        "the execution resumed on a replacement",
        async () => {
          const es = (await store.read(execRef(TENANT, executionId))).events;
          // An execution that ended never resumes: say why now rather than after the deadline (CI at
          // load ~25: its wait's read met the provisioner restarting and failed the run).
          const end = es.find((e) => e.event.type === "exec.failed" || e.event.type === "exec.completed");
          if (end) throw new Error(`the execution ended instead of waiting: ${JSON.stringify(end.event)}`);
          return es.some((e) => e.event.type === "exec.resumed") ? true : undefined;
        },
        120_000,
      );

      // Bob's token is no resolver: his run page shows the open wait without buttons, and the API refuses him.
      const bob = await runPage(BOB, id);
      await bob.waitForSelector('tr[data-wait="approval"][data-state="open"]', { timeout: 30_000 });
      expect(await bob.$$('button[data-wait-action^="approval:"]')).toHaveLength(0);
      const before = await store.lastSeq({ aggregate: "run", tenantId: TENANT, id });
      const refused = await apiClient(cp.apiUrl, BOB).post(`/v1/runs/${id}/signals/approval`, {
        payload: { approved: true },
      });
      expect(refused.status).toBe(403);
      expect(await store.lastSeq({ aggregate: "run", tenantId: TENANT, id })).toBe(before);

      const alice = await runPage(ALICE, id);
      await alice.click('button[data-wait-action="approval:Approve"]');
      await alice.waitForSelector('#run-summary[data-status="completed"]', { timeout: 60_000 });
      await alice.waitForSelector('tr[data-wait="approval"][data-state="resolved"]', { timeout: 30_000 });

      const journal = (await store.read(execRef(TENANT, executionId))).events.map((e) => e.event);
      const of = (t: string) => journal.filter((e) => e.type === t).map((e) => e.data as Json);
      expect(of("exec.wait-opened")).toHaveLength(1);
      expect(of("exec.resumed")).toHaveLength(1);
      expect(of("exec.wait-resolved")).toMatchObject([{ by: "signal", principal: `tenant:${TENANT}:token:alice` }]);
      expect(of("exec.step-completed").map((d) => [d.stepId, d.output])).toEqual([
        ["draft", expect.anything()],
        ["review", { approved: true }],
        ["publish", expect.anything()],
      ]);
      expect(problems).toEqual([]);
    } finally {
      await nc.close();
    }
  });
});
