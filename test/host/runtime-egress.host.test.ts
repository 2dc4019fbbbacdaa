import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, type DagInput } from "../../contracts/index.ts";
import {
  admitAndDispatch,
  openControlPlaneDouble,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: a real runtime process (its real DNS resolution, sockets and egress policy) calling real
// HTTP servers on loopback, journaling to a real nats-server. The tenant's allowlist names ONE
// loopback server (host:port); every other private destination must be refused before any byte is sent.
const TENANT = "t-egress";
const MAX = 64 * 1024;
let cp: ControlPlaneDouble;
let tag: string;
let rt: RuntimeProcess;
let allowed: Server;
let other: Server;
const hits = { allowed: [] as string[], other: [] as string[] };
let allowedPort = 0;
let otherPort = 0;

async function listen(name: keyof typeof hits, handler: Parameters<typeof createServer>[1]): Promise<Server> {
  const s = createServer((req, res) => {
    hits[name].push(req.url ?? "");
    handler?.(req, res);
  });
  await new Promise<void>((ok) => s.listen(0, "127.0.0.1", ok));
  return s;
}

beforeAll(async () => {
  other = await listen("other", (_req, res) => res.end("you should not see this"));
  otherPort = (other.address() as AddressInfo).port;
  allowed = await listen("allowed", (req, res) => {
    if (req.url === "/ok") return res.end("fine");
    if (req.url === "/to-other") return res.writeHead(302, { location: `http://127.0.0.1:${otherPort}/` }).end();
    if (req.url === "/to-metadata") return res.writeHead(307, { location: "http://169.254.169.254/latest" }).end();
    if (req.url?.startsWith("/loop")) return res.writeHead(302, { location: `/loop${Math.random()}` }).end();
    if (req.url === "/big") {
      // 10 MB without a content-length: the cap must be enforced while reading, not from a header.
      const chunk = Buffer.alloc(64 * 1024, 120);
      let sent = 0;
      const pump = () => {
        while (sent < 10 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("error", () => undefined);
      return pump();
    }
    if (req.url === "/big-declared") {
      res.writeHead(200, { "content-length": String(10 * 1024 * 1024) });
      res.on("error", () => undefined);
      return res.write(Buffer.alloc(1024));
    }
    res.writeHead(404).end();
  });
  allowedPort = (allowed.address() as AddressInfo).port;
  tag = uniqueName("egress");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    egress: { [TENANT]: { allow: [`127.0.0.1:${allowedPort}`], maxResponseBytes: MAX } },
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
  allowed?.closeAllConnections();
  other?.closeAllConnections();
  await Promise.all([allowed, other].map((s) => new Promise((ok) => s?.close(ok))));
});

let runNo = 0;
const httpStep = (url: string) => runOne({ id: "call", kind: "http", params: { url, timeoutMs: 5000 } });

async function runOne(step: DagInput["steps"][number]) {
  const sharedRunId = `run-egress-${++runNo}`;
  const localRunId = `${sharedRunId}-l1`;
  const dag = DagDefinition.parse({
    steps: [step],
  } satisfies DagInput);
  const dispatchedSeq = await admitAndDispatch(
    cp,
    {
      tenantId: TENANT,
      sharedRunId,
      localRunId,
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
      transport: "http",
    },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: TENANT, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  const executionId = startedExecutionId(r.payload, sharedRunId, localRunId);
  const events = await waitForJournal(cp, TENANT, executionId, (es) =>
    es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
  );
  const end = events.at(-1)?.event;
  // One failed attempt: the refusal is not retryable, whatever the step's retry policy.
  const attempts = events.filter((e) => e.event.type === "exec.step-failed").length;
  return { end, attempts, events };
}

describe("egress policy of http steps (real runtime process)", () => {
  it.each([
    ["a loopback address not in the allowlist", () => `http://127.0.0.1:${otherPort}/`],
    ["the cloud metadata address", () => "http://169.254.169.254/latest/meta-data/"],
    ["a 10.x private address", () => "http://10.1.2.3:8080/"],
    ["a name that resolves to loopback (localhost)", () => `http://localhost:${otherPort}/`],
    ["an IPv4-mapped IPv6 loopback", () => `http://[::ffff:127.0.0.1]:${otherPort}/`],
    ["a redirect from an allowed server to a private address", () => `http://127.0.0.1:${allowedPort}/to-other`],
    ["a redirect from an allowed server to the metadata address", () => `http://127.0.0.1:${allowedPort}/to-metadata`],
  ])("refuses %s with egress-denied, sends nothing there and does not retry", async (_what, url) => {
    const { end, attempts } = await httpStep(url());
    expect(end).toMatchObject({ type: "exec.failed", data: { stepId: "call", reason: { code: "egress-denied" } } });
    expect(attempts).toBe(1);
    expect(hits.other).toEqual([]);
  });

  it("lets the allowlisted host:port through and records its answer", async () => {
    const { end, events } = await httpStep(`http://127.0.0.1:${allowedPort}/ok`);
    expect(end?.type).toBe("exec.completed");
    const done = events.find((e) => e.event.type === "exec.step-completed")?.event.data as { output: unknown };
    expect(done.output).toMatchObject({ status: 200, body: "fine" });
  });

  it("refuses a 10 MB answer with response-too-large (streamed and declared) and the runtime keeps running", async () => {
    for (const path of ["/big", "/big-declared"]) {
      const { end } = await httpStep(`http://127.0.0.1:${allowedPort}${path}`);
      expect(end).toMatchObject({ type: "exec.failed", data: { reason: { code: "response-too-large" } } });
    }
    const after = await httpStep(`http://127.0.0.1:${allowedPort}/ok`);
    expect(after.end?.type).toBe("exec.completed");
    expect(rt.stderr()).not.toMatch(/FATAL|heap out of memory/);
  });

  it("refuses an llm step whose own baseUrl is a private address with egress-denied", async () => {
    const { end } = await runOne({
      id: "call",
      kind: "llm",
      params: { model: "m", prompt: "hi", baseUrl: `http://127.0.0.1:${otherPort}/v1` },
    });
    expect(end).toMatchObject({ type: "exec.failed", data: { stepId: "call", reason: { code: "egress-denied" } } });
    expect(hits.other).toEqual([]);
  });

  it("stops after 5 redirects with too-many-redirects", async () => {
    const before = hits.allowed.filter((u) => u.startsWith("/loop")).length;
    const { end } = await httpStep(`http://127.0.0.1:${allowedPort}/loop`);
    expect(end).toMatchObject({ type: "exec.failed", data: { reason: { code: "too-many-redirects" } } });
    expect(hits.allowed.filter((u) => u.startsWith("/loop")).length - before).toBe(6);
  });
});
