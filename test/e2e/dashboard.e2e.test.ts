import { existsSync, mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { Redis } from "ioredis";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagInput } from "../../contracts/index.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";

/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against the api
 * process serving it, with every service a real process (api, admission, capacity, provisioner,
 * recovery, forensics), real process runtimes and real nats-server, Redis and FerretDB. A run
 * submitted through the API has its steps turn completed on its page as the per-run feed brings
 * them; a second run is cancelled with the page's button; the operator page shows the runtime,
 * the queue and the incidents; no page logs a console error. The run page's screenshot is kept
 * under .run/artifacts/ (git-ignored).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/lib/chromium/chromium";
const ARTIFACTS = resolve(import.meta.dirname, "../../.run/artifacts");
const SCREENSHOT = resolve(ARTIFACTS, "dashboard-run-page.png");
const TENANT_TOKEN = "token-tenant-ui-0000001";
const OPS_TOKEN = "token-operator-ui-000001";
const REDIS_DB = 15;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const sleepChain = (name: string, n: number, ms: number): DagInput => ({
  name,
  steps: Array.from({ length: n }, (_, i) => ({
    id: `s${i + 1}`,
    kind: "sleep" as const,
    dependsOn: i === 0 ? [] : [`s${i}`],
    params: { durationMs: ms },
  })),
});

describe("dashboard in Chromium (playwright-core): run list, live run page, cancel button, fork control, operator page (all services real)", () => {
  let cp: ControlPlane;
  let redis: Redis;
  let browser: Browser;
  const problems: string[] = [];

  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cp.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  /** A page signed in with `token` through the login form; console errors and page errors are collected. */
  async function signedIn(token: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${cp.apiUrl}/`);
    await page.fill("#token", token);
    await page.click("#login button");
    await page.waitForSelector("#nav:not([hidden])");
    return page;
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `no Chromium at ${CHROMIUM}: run \`make tools\` (installs Debian's chromium) or set CHROMIUM_PATH`,
      );
    redis = new Redis(inject("redisUrl"), { db: REDIS_DB });
    await redis.flushdb();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/${REDIS_DB}`,
      mongoUrl: inject("mongoUrl"),
      services: ["capacity", "recovery", "provisioner", "admission", "forensics", "scheduler", "api"],
      config: {
        controlPlaneId: "cp-ui",
        heartbeatIntervalMs: 250,
        tenants: [
          {
            tenantId: "t-ui",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 4,
            transport: "http",
          },
        ],
        tokens: {
          [TENANT_TOKEN]: { role: "tenant", tenantId: "t-ui" },
          [OPS_TOKEN]: { role: "operator", name: "ops" },
        },
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--disable-dev-shm-usage"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await cp?.stop();
    redis?.disconnect();
  });

  it("shows a run's steps turning completed live from its feed, lists it, and saves a screenshot of the run page", async () => {
    const sub = await call(TENANT_TOKEN, "POST", "/v1/runs", {
      dag: sleepChain("ui-live", 3, 800),
      labels: { team: "ui" },
    });
    expect(sub.status).toBe(201);
    const id = sub.body.sharedRunId as string;

    const page = await signedIn(TENANT_TOKEN);
    expect(await page.textContent("#who")).toBe("tenant t-ui");
    await page.goto(`${cp.apiUrl}/#/runs/${id}`);
    await page.waitForSelector('tr[data-step="s1"]');
    // The page opened before the run ended: its last step was not completed yet.
    expect(await page.getAttribute('tr[data-step="s3"]', "data-state")).not.toBe("completed");
    for (const step of ["s1", "s2", "s3"])
      await page.waitForSelector(`tr[data-step="${step}"][data-state="completed"]`, { timeout: 60_000 });
    await page.waitForSelector('#run-summary[data-status="completed"]', { timeout: 30_000 });
    // The steps came with the live feed: each completion is a row of the events table.
    const types = await page.$$eval("#events tr td:nth-child(3)", (tds) => tds.map((td) => td.textContent));
    expect(types[0]).toBe("run.submitted");
    expect(types.filter((t) => t === "exec.step-completed")).toHaveLength(3);
    expect(types.at(-1)).toBe("run.completed");
    expect(await page.isDisabled("#cancel")).toBe(true);
    // The causal timeline appears once the read models include the run, and follows them to its end.
    await page.waitForSelector('#timeline td:text-is("run.completed")', { timeout: 30_000 });
    expect(await page.textContent("#timeline")).toContain("exec.completed");
    expect(await page.textContent("#incidents")).toContain("none");
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);

    // The run list (read model): the run, with its status and labels, filterable by label and status.
    await page.goto(`${cp.apiUrl}/#/runs?label=team%3Dui&status=completed`);
    await page.waitForSelector(`#runs tr[data-run="${id}"]`, { timeout: 30_000 });
    expect(await page.textContent(`#runs tr[data-run="${id}"]`)).toContain("team=ui");
    await page.goto(`${cp.apiUrl}/#/runs?status=failed`);
    await page.waitForSelector("text=no runs on this page");

    // The ended run's fork control: fork from s2 opens the fork's page; s1 is reused, s2-s3 run.
    await page.goto(`${cp.apiUrl}/#/runs/${id}`);
    await page.waitForSelector("#fork:not([disabled])", { timeout: 30_000 });
    await page.selectOption("#fork-step", "s2");
    await page.click("#fork");
    await page.waitForURL((u) => !u.hash.includes(id), { timeout: 30_000 });
    const forkId = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/runs\//, "").replace(/\?.*$/, ""));
    expect(forkId).not.toBe(id);
    await page.waitForSelector('#run-summary[data-status="completed"]', { timeout: 60_000 });
    expect(await page.textContent('[data-field="forked from"]')).toBe(`${id} at s2`);
    const fork = (await call(TENANT_TOKEN, "GET", `/v1/runs/${forkId}`)).body;
    expect(fork.forkedFrom).toMatchObject({ sharedRunId: id, fromStep: "s2" });
    expect(fork.steps.map((s: Json) => [s.id, s.reusedFrom])).toEqual([
      ["s1", id],
      ["s2", null],
      ["s3", null],
    ]);
    await page.close();
  });

  it("cancels a second run with the run page's button: the run ends cancelled, requested by the tenant", async () => {
    const sub = await call(TENANT_TOKEN, "POST", "/v1/runs", { dag: sleepChain("ui-cancel", 3, 20_000) });
    const id = sub.body.sharedRunId as string;
    await eventually(
      `run ${id} started`,
      async () => ((await call(TENANT_TOKEN, "GET", `/v1/runs/${id}`)).body.status === "started" ? true : undefined),
      60_000,
    );
    const page = await signedIn(TENANT_TOKEN);
    await page.goto(`${cp.apiUrl}/#/runs/${id}`);
    await page.waitForSelector('tr[data-step="s1"][data-state="running"]', { timeout: 30_000 });
    await page.click("#cancel:not([disabled])");
    await page.waitForSelector('#run-summary[data-status="cancelled"]', { timeout: 30_000 });
    expect(await page.textContent("#cancel-note")).toMatch(/cancel (requested|cancelled)/);
    expect(await page.getAttribute('tr[data-step="s1"]', "data-state")).toBe("cancelled");
    const run = (await call(TENANT_TOKEN, "GET", `/v1/runs/${id}`)).body;
    expect(run.status).toBe("cancelled");
    expect(run.cancelRequested).toMatchObject({ reason: "cancelled from the dashboard" });
    expect(run.steps.some((s: Json) => s.state === "completed")).toBe(false);
    await page.close();
  });

  it("shows operators the runtime with its capacity, the queue and the incidents; tenants get no operator page", async () => {
    const page = await signedIn(OPS_TOKEN);
    expect(await page.textContent("#who")).toBe("operator ops");
    await page.click("#nav-operator");
    await page.waitForSelector("#runtimes tr[data-runtime]", { timeout: 30_000 });
    const runtime = await page.textContent("#runtimes tbody tr");
    expect(runtime).toContain("t-ui");
    expect(runtime).toContain("http");
    await page.waitForSelector("#queue-total");
    expect(await page.textContent("#queue-total")).toBe("0 runs waiting");
    await page.waitForSelector("#incidents :is(table, p)");
    expect(await page.textContent("#incidents")).toContain("no incidents");
    // An operator reads a tenant's runs by naming it: the tenant selector starts on the first one.
    await page.click('a[href="#/runs"]');
    await page.waitForSelector("#runs tr[data-run]", { timeout: 30_000 });
    // The live run, its fork (from the dashboard's fork control) and the cancelled run.
    expect(await page.$$("#runs tr[data-run]")).toHaveLength(3);
    await page.close();

    const tenantPage = await signedIn(TENANT_TOKEN);
    expect(await tenantPage.isHidden("#nav-operator")).toBe(true);
    await tenantPage.close();
  });

  it("lists the tenant's schedules with their spec and fires, and pauses one with its button", async () => {
    const made = await call(TENANT_TOKEN, "POST", "/v1/schedules", {
      scheduleId: "ui-nightly",
      spec: { cron: "0 3 * * *", timezone: "Europe/Berlin" },
      dag: sleepChain("ui-sched", 1, 10),
    });
    expect(made.status).toBe(201);
    const page = await signedIn(TENANT_TOKEN);
    await page.click('a[href="#/schedules"]');
    await page.waitForSelector('#schedules tr[data-schedule="ui-nightly"][data-status="active"]', { timeout: 30_000 });
    expect(await page.textContent('tr[data-schedule="ui-nightly"]')).toContain("0 3 * * * (Europe/Berlin)");
    await page.click('tr[data-schedule="ui-nightly"] button[data-action="pause"]');
    await page.waitForSelector('tr[data-schedule="ui-nightly"][data-status="paused"]', { timeout: 30_000 });
    const view = (await call(TENANT_TOKEN, "GET", "/v1/schedules/ui-nightly")).body;
    expect(view).toMatchObject({ status: "paused", nextFireAt: null });
    await page.close();
  });

  it("links a parent run and its child run (a run step, docs/control-flow.md) both ways on their run pages", async () => {
    const sub = await call(TENANT_TOKEN, "POST", "/v1/runs", {
      dag: { name: "ui-parent", steps: [{ id: "sub", kind: "run", dag: sleepChain("ui-child", 1, 10) }] },
    });
    expect(sub.status).toBe(201);
    const id = sub.body.sharedRunId as string;
    const page = await signedIn(TENANT_TOKEN);
    await page.goto(`${cp.apiUrl}/#/runs/${id}`);
    await page.waitForSelector('#run-summary[data-status="completed"]', { timeout: 60_000 });
    const child = (await call(TENANT_TOKEN, "GET", `/v1/runs/${id}`)).body.children[0].sharedRunId as string;
    expect(await page.textContent('[data-field="child runs"]')).toBe(`${child} (sub)`);
    await page.click(`[data-field="child runs"] a[data-run-link="${child}"]`);
    await page.waitForURL((u) => u.hash.includes(child), { timeout: 30_000 });
    await page.waitForSelector('#run-summary[data-status="completed"]', { timeout: 30_000 });
    expect(await page.textContent('[data-field="parent run"]')).toBe(`${id} (step sub)`);
    expect(await page.getAttribute('[data-field="parent run"] a', "href")).toBe(`#/runs/${id}`);
    await page.close();
  });

  it("shows a map step's item counts from GET /v1/runs/:id in the run page's steps table", async () => {
    const sub = await call(TENANT_TOKEN, "POST", "/v1/runs", {
      dag: {
        name: "ui-map",
        steps: [
          { id: "each", kind: "compute", map: { over: "input.items", maxConcurrency: 2 }, params: { durationMs: 10 } },
        ],
      },
      input: { items: [1, 2, 3, 4] },
    });
    expect(sub.status).toBe(201);
    const page = await signedIn(TENANT_TOKEN);
    await page.goto(`${cp.apiUrl}/#/runs/${sub.body.sharedRunId}`);
    await page.waitForSelector('#run-summary[data-status="completed"]', { timeout: 60_000 });
    const headers = await page.$$eval("#steps th", (ths) => ths.map((th) => th.textContent));
    const cell = await page.$$eval('#steps tr[data-step="each"] td', (tds) => tds.map((td) => td.textContent));
    expect(cell[headers.indexOf("map items")]).toBe("4/4 completed, 0 failed, 0 open");
    await page.close();
  });

  it("logged no console error and no page error on any page", () => {
    expect(problems).toEqual([]);
  });
});
