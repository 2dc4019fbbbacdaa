import { randomBytes } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { storedOutputNames, validateRunLog } from "../../aggregates/replay-validation.ts";
import { decodeEvent, type DagInput, type DroverEvent } from "../../contracts/index.ts";
import { createOutputStore, outputsStreamOf } from "../../platform/output-store.ts";
import { createEventStore } from "../../streams/index.ts";
import { execRef, runtimeRef } from "../../streams/subjects.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { startOpenAiFake, type OpenAiFake } from "../support/openai-fake.ts";
import { eventually } from "../support/streams.ts";

/**
 * Tenant code end to end, every service a real process on real nats-server, Redis and FerretDB,
 * runtimes real process hosts running the examples' worker modules (bundled by the provisioner),
 * the `llm` and `http` steps talking to an OpenAI-compatible fake served by this test.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const DOC_DAG = JSON.parse(await readFile(join(ROOT, "examples/document-pipeline/dag.json"), "utf8")) as DagInput;
const DATA_DAG = JSON.parse(await readFile(join(ROOT, "examples/data-pipeline/dag.json"), "utf8")) as DagInput;
const DOCUMENT = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" "); // ~26 KB: the fetch output is stored
const LLM_KEY = `sk-llm-${randomBytes(12).toString("hex")}`;
const SIGNING_KEY = `sk-sign-${randomBytes(12).toString("hex")}`;
const TOKENS = {
  "token-tenant-docs-000001": { role: "tenant", tenantId: "t-docs" },
  "token-tenant-data-000001": { role: "tenant", tenantId: "t-data" },
  "token-tenant-plain-00001": { role: "tenant", tenantId: "t-plain" },
  "token-tenant-hyb-0000001": { role: "tenant", tenantId: "t-hyb" },
  "token-tenant-shared-0001": { role: "tenant", tenantId: "t-shared" },
} as const;

describe("tenant code: custom steps, data flow, object-store outputs, secrets by reference (all services real)", () => {
  let cp: ControlPlane;
  let fake: OpenAiFake;
  let nc: NatsConnection;
  const answers: unknown[] = [];
  const docs = apiClient("", "token-tenant-docs-000001");
  const client = (token: keyof typeof TOKENS) => {
    const c = apiClient(cp.apiUrl, token);
    const keep = async <T extends { body: unknown }>(p: Promise<T>) => {
      const r = await p;
      answers.push(r.body);
      return r;
    };
    return {
      submit: (dag: DagInput, input?: unknown) => keep(c.post("/v1/runs", { dag, ...(input ? { input } : {}) })),
      run: (id: string) => keep(c.run(id)),
      events: (id: string) => keep(c.events(id)),
    };
  };
  const completed = async (token: keyof typeof TOKENS, id: string, timeoutMs = 60_000) =>
    eventually(
      `run ${id} completed`,
      async () => {
        const r = await client(token).run(id);
        if (r.body.status === "failed" || r.body.status === "rejected")
          throw new Error(`run ${id} ${r.body.status}: ${r.body.lastReason}`);
        return r.body.status === "completed" ? r.body : undefined;
      },
      timeoutMs,
    );
  const docInput = (key: string) => ({
    documentUrl: `${fake.url}/doc/${key}`,
    model: "fake-model",
    title: "word list",
    auditUrl: `${fake.url}/audit`,
  });

  beforeAll(async () => {
    void docs;
    fake = await startOpenAiFake(DOCUMENT);
    const dir = join(ROOT, ".run");
    const secretsFile = join(dir, `secrets-${randomBytes(4).toString("hex")}.json`);
    await writeFile(secretsFile, JSON.stringify({ "llm-api-key": LLM_KEY }));
    process.env.EXAMPLE_SIGNING_KEY = SIGNING_KEY;
    const redis = new Redis(inject("redisUrl"), { db: 13 });
    await redis.flushdb();
    redis.disconnect();
    const worker = (name: string, kinds: string[]) => ({ module: join(ROOT, `examples/${name}/worker.ts`), kinds });
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/13`,
      mongoUrl: inject("mongoUrl"),
      services: ["capacity", "recovery", "provisioner", "admission", "forensics", "api"],
      config: {
        controlPlaneId: "cp-tenant-code",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        llmBaseUrl: fake.baseUrl,
        tenants: [
          {
            tenantId: "t-docs",
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            workersPerInstance: 3,
            maxWorkersPerRun: 3,
            worker: worker("document-pipeline", ["chunk-text", "merge-summaries"]),
            secrets: { file: secretsFile },
            // The documents come from the test's fake on loopback, outside the default egress policy.
            egress: { allow: [new URL(fake.url).host] },
          },
          {
            tenantId: "t-data",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            worker: worker("data-pipeline", ["hash-records", "normalize", "sign"]),
            secrets: { env: { "signing-key": "EXAMPLE_SIGNING_KEY" } },
          },
          { tenantId: "t-plain", isolationMode: "dedicated", maxRuntimeInstances: 1 },
          { tenantId: "t-shared", isolationMode: "shared", maxRuntimeInstances: 1 },
          {
            tenantId: "t-hyb",
            isolationMode: "hybrid",
            allowSharedFallback: true,
            maxRuntimeInstances: 0,
            worker: worker("data-pipeline", ["hash-records", "normalize", "sign"]),
          },
        ],
        tokens: TOKENS,
      },
    });
    nc = await connectHarness({ servers: inject("natsUrl") });
  });
  afterAll(async () => {
    await nc?.close();
    await cp?.stop();
    await fake?.close();
    delete process.env.EXAMPLE_SIGNING_KEY;
  });

  let uninterrupted: unknown;

  it("the document pipeline: http → custom chunking → llm fan-out with a bearer secret → custom merge; the run's output is the merge's, the large fetch output is in the object store", async () => {
    const sub = await client("token-tenant-docs-000001").submit(DOC_DAG, docInput("first"));
    expect(sub.body.error).toBeUndefined();
    expect(sub.status).toBe(201);
    const run = await completed("token-tenant-docs-000001", sub.body.sharedRunId);
    const output = run.output as { title: string; summary: string; parts: number };
    expect(output).toEqual({
      title: "word list",
      parts: 3,
      summary:
        "1. about: word0 word1 word2 word3\n2. about: word1000 word1001 word1002 word1003\n3. about: word2000 word2001 word2002 word2003",
    });
    uninterrupted = run.output;
    // Each llm step called the provider once, with the tenant's key as a bearer token.
    expect([...fake.bearers]).toEqual([`Bearer ${LLM_KEY}`]);
    expect(fake.docGets.get("first")).toBe(1);
    const journal = await createEventStore(nc, cp.layout).read(execRef("t-docs", run.executionId));
    const fetched = journal.events.find(
      (e) => e.event.type === "exec.step-completed" && e.event.data.stepId === "fetch",
    )?.event as Extract<DroverEvent, { type: "exec.step-completed" }>;
    expect(fetched.data.output).toBeUndefined();
    expect(fetched.data.outputRef?.bucket).toBe(outputsStreamOf(cp.layout));
    const stored = JSON.parse(
      new TextDecoder().decode(await createOutputStore(nc, cp.layout).get(fetched.data.outputRef!)),
    ) as { body: string };
    expect(stored.body).toBe(DOCUMENT);
  });

  it("the data pipeline: custom steps hash, normalise and sign with a secret from the provisioner's environment; dependents get the real outputs", async () => {
    const records = [
      { id: "a", name: " ada ", amount: 1.234 },
      { id: "b", name: "bob", amount: 2 },
    ];
    const sub = await client("token-tenant-data-000001").submit(DATA_DAG, { records });
    expect(sub.status).toBe(201);
    const run = await completed("token-tenant-data-000001", sub.body.sharedRunId);
    const { createHash, createHmac } = await import("node:crypto");
    const hashed = records.map((r) => ({ ...r, sha256: createHash("sha256").update(JSON.stringify(r)).digest("hex") }));
    const normalized = hashed.map((r) => ({
      ...r,
      name: r.name.trim().toUpperCase(),
      amount: Math.round(r.amount * 100) / 100,
    }));
    const batch = { records: normalized, total: 3.23, count: 2 };
    // The recorded outputs are canonical JSON (sorted keys): sign what the step received, as the worker does.
    const journal = await createEventStore(nc, cp.layout).read(execRef("t-data", run.executionId));
    const norm = journal.events.find(
      (e) => e.event.type === "exec.step-completed" && e.event.data.stepId === "normalize",
    )?.event as Extract<DroverEvent, { type: "exec.step-completed" }>;
    expect(norm.data.output).toEqual(batch);
    expect(run.output).toEqual({
      algorithm: "hmac-sha256",
      signature: createHmac("sha256", SIGNING_KEY).update(JSON.stringify(norm.data.output)).digest("hex"),
    });
  });

  it("refuses at submission a custom kind the tenant's settings can never offer (step-kind-not-offered), and a $ref to a non-dependency (dag-invalid)", async () => {
    const plain = await client("token-tenant-plain-00001").submit(DATA_DAG, { records: [] });
    expect(plain.status).toBe(422);
    expect(plain.body.error.code).toBe("step-kind-not-offered");
    const bad = await client("token-tenant-data-000001").submit({
      steps: [
        { id: "a", kind: "compute" },
        { id: "b", kind: "custom", handler: "normalize", params: { records: { $ref: "steps.a.output" } } },
      ],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("dag-invalid");
    expect(JSON.stringify(bad.body.error.details)).toContain('does not depend on step \\"a\\"');
  });

  it("never places a run on a runtime lacking one of its kinds: a hybrid tenant's custom run waits on shared capacity with step-kind-unavailable, its built-in run is placed there", async () => {
    const shared = await client("token-tenant-shared-0001").submit({ steps: [{ id: "a", kind: "compute" }] });
    await completed("token-tenant-shared-0001", shared.body.sharedRunId);
    const builtin = await client("token-tenant-hyb-0000001").submit({ steps: [{ id: "a", kind: "compute" }] });
    await completed("token-tenant-hyb-0000001", builtin.body.sharedRunId);
    const custom = await client("token-tenant-hyb-0000001").submit(DATA_DAG, { records: [] });
    expect(custom.status).toBe(201);
    const queued = await eventually("custom run queued with its reason", async () => {
      const r = await client("token-tenant-hyb-0000001").run(custom.body.sharedRunId);
      return r.body.lastReason === "step-kind-unavailable" ? r.body : undefined;
    });
    expect(queued.status).toBe("queued");
    expect(queued.placement).toBeNull();
    const events = await client("token-tenant-hyb-0000001").events(custom.body.sharedRunId);
    const reason = (events.body.events as { event: DroverEvent }[]).find((e) => e.event.type === "run.queued-globally")
      ?.event as Extract<DroverEvent, { type: "run.queued-globally" }>;
    expect(reason.data.reason.detail).toMatch(/lacks custom:hash-records,custom:normalize,custom:sign/);
    expect(events.body.events.some((e: { event: DroverEvent }) => e.event.type === "run.admitted")).toBe(false);
  });

  it("SIGKILL mid document pipeline: resumed under the same ExecutionId, every step completed before the kill ran exactly once (fetch, chunk, llm calls), the output equals an uninterrupted run's", async () => {
    const store = createEventStore(nc, cp.layout);
    // Park the second and third chunk's summaries: the kill lands after fetch, chunk and summarize-0 completed.
    const release = fake.hold((p) => p.startsWith("word1000") || p.startsWith("word2000"));
    const sub = await client("token-tenant-docs-000001").submit(DOC_DAG, docInput("killed"));
    const id = sub.body.sharedRunId as string;
    const { executionId, runtime } = await eventually(
      "fetch, chunk and summarize-0 journaled",
      async () => {
        const r = await client("token-tenant-docs-000001").run(id);
        if (!r.body.executionId) return undefined;
        const j = await store.read(execRef("t-docs", r.body.executionId));
        const done = j.events
          .filter((e) => e.event.type === "exec.step-completed")
          .map((e) => (e.event.data as { stepId: string }).stepId);
        const started = j.events.find((e) => e.event.type === "exec.started")?.event as Extract<
          DroverEvent,
          { type: "exec.started" }
        >;
        return ["fetch", "chunk", "summarize-0"].every((s) => done.includes(s))
          ? { executionId: r.body.executionId as string, runtime: started.data.runtimeInstanceId as string }
          : undefined;
      },
      60_000,
    );
    const host = (await store.read(runtimeRef(runtime))).events.find((e) => e.event.type === "runtime.host-started")
      ?.event as Extract<DroverEvent, { type: "runtime.host-started" }>;
    process.kill(host.data.pid!, "SIGKILL");
    release();
    const run = await completed("token-tenant-docs-000001", id, 90_000);
    expect(run.executionId).toBe(executionId);
    const journal = await store.read(execRef("t-docs", executionId));
    const resumed = journal.events.find((e) => e.event.type === "exec.resumed")?.event as Extract<
      DroverEvent,
      { type: "exec.resumed" }
    >;
    expect(resumed.data.runtimeInstanceId).not.toBe(runtime);
    expect(fake.docGets.get("killed")).toBe(1);
    expect(fake.audits.get(`${executionId}/chunk`)).toBe(1);
    expect(fake.audits.get(`${executionId}/merge`)).toBe(1);
    // Both runs sent the same first-chunk prompt once each: 2 in all, none for the resume.
    expect(fake.completions.get(DOCUMENT.split(" ").slice(0, 1000).join(" "))).toBe(2);
    expect(run.output).toEqual(uninterrupted);
    const completions = journal.events.filter((e) => e.event.type === "exec.step-completed");
    expect(completions).toHaveLength(DOC_DAG.steps.length);
  });

  it("replay validation passes for every custom-step run, reading object-store outputs back, and names the sequence of a tampered stored output", async () => {
    const log = await wholeLog(nc, cp.layout.eventStream);
    const runs = log.filter((r) => r.event.type === "run.completed").map((r) => r.subject.split(".").at(-2)!);
    const os = createOutputStore(nc, cp.layout);
    const stored = new Map<string, string>();
    for (const ref of storedOutputNames(log)) {
      const match = log.find(
        (r) => r.event.type === "exec.step-completed" && r.event.data.outputRef?.name === ref.name,
      )!;
      const data = (match.event as Extract<DroverEvent, { type: "exec.step-completed" }>).data;
      stored.set(ref.name, new TextDecoder().decode(await os.get(data.outputRef!)));
    }
    expect(stored.size).toBeGreaterThanOrEqual(2);
    const { createHash } = await import("node:crypto");
    const digest = (s: string) => createHash("sha256").update(s).digest("hex");
    for (const id of runs)
      expect(validateRunLog(id, log, { digest, storedOutputs: stored })).toMatchObject({ kind: "match" });
    const [name] = [...stored.keys()];
    const tampered = new Map(stored).set(name!, stored.get(name!)!.replace("word1", "wordX"));
    const at = log.find((r) => r.event.type === "exec.step-completed" && r.event.data.outputRef?.name === name)!;
    const run = log.find(
      (r) => r.event.type === "exec.started" && r.subject.includes(`.${at.subject.split(".").at(-2)}.`),
    )!;
    const result = validateRunLog((run.event as Extract<DroverEvent, { type: "exec.started" }>).data.sharedRunId, log, {
      digest,
      storedOutputs: tampered,
    });
    expect(result).toMatchObject({ kind: "divergence", divergence: { seq: at.seq, invariant: "output-rederivation" } });
  });

  it("no secret value appears in the whole stream (events, heartbeats, object store), Redis, MongoDB, any service or runtime log, or any API answer", async () => {
    const secrets = [LLM_KEY, SIGNING_KEY];
    const found: string[] = [];
    const look = (where: string, text: string) => {
      for (const s of secrets) if (text.includes(s)) found.push(`${where} holds ${s.slice(0, 7)}…`);
    };
    const jsm = await jetstreamManager(nc);
    for (const stream of [cp.layout.eventStream, cp.layout.heartbeatStream, outputsStreamOf(cp.layout)]) {
      const info = await jsm.streams.info(stream);
      expect(info.state.messages).toBeGreaterThan(0);
      for await (const m of await (
        await jetstream(nc).consumers.get(stream)
      ).fetch({ max_messages: info.state.messages, expires: 5000 })) {
        look(`${stream} seq ${m.seq}`, new TextDecoder().decode(m.data));
        if (m.info.pending === 0) break;
      }
    }
    const redis = new Redis(`${inject("redisUrl")}/13`);
    try {
      const keys = await redis.keys("*");
      expect(keys.length).toBeGreaterThan(0);
      for (const k of keys) {
        const type = await redis.type(k);
        const value =
          type === "hash"
            ? await redis.hgetall(k)
            : type === "string"
              ? await redis.get(k)
              : type === "zset"
                ? await redis.zrange(k, "0", "-1")
                : type === "set"
                  ? await redis.smembers(k)
                  : type;
        look(`redis ${k}`, JSON.stringify(value));
      }
    } finally {
      redis.disconnect();
    }
    const mongo = new MongoClient(inject("mongoUrl"));
    try {
      await mongo.connect();
      let docs = 0;
      for (const { name } of (await mongo.db().admin().listDatabases()).databases) {
        for (const c of await mongo.db(name).listCollections().toArray()) {
          for (const d of await mongo.db(name).collection(c.name).find().toArray()) {
            docs++;
            look(`mongo ${name}.${c.name}`, JSON.stringify(d));
          }
        }
      }
      expect(docs).toBeGreaterThan(0);
    } finally {
      await mongo.close();
    }
    for (const file of await readdir(cp.logDir, { recursive: true })) {
      if (!/\.log$/.test(file)) continue;
      look(`log ${file}`, await readFile(join(cp.logDir, file), "utf8"));
    }
    expect(answers.length).toBeGreaterThan(10);
    look("API answers", JSON.stringify(answers));
    expect(found).toEqual([]);
    // The keys did reach what needed them: the provider saw the bearer key.
    expect(fake.bearers.has(`Bearer ${LLM_KEY}`)).toBe(true);
  });
});

/** Every event of the stream, decoded, with subject and sequence (what replay validation reads). */
async function wholeLog(nc: NatsConnection, stream: string) {
  const jsm = await jetstreamManager(nc);
  const n = (await jsm.streams.info(stream)).state.messages;
  const out: { seq: number; subject: string; event: DroverEvent }[] = [];
  for await (const m of await (await jetstream(nc).consumers.get(stream)).fetch({ max_messages: n, expires: 5000 })) {
    out.push({ seq: m.seq, subject: m.subject, event: decodeEvent(m.data) });
    if (m.info.pending === 0) break;
  }
  return out;
}
