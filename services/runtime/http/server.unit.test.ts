import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// A fresh node process (the test runner's own module cache would hide what the server loads): starts the
// HTTP command transport on a free loopback port, answers one command, and lists what it required.
const PROBE = `
import { createRequire } from "node:module";
import { startHttpServer } from ${JSON.stringify(resolve(import.meta.dirname, "server.ts"))};
const s = await startHttpServer(async () => ({ httpStatus: 200, result: { success: true, operation: "GetQueueStatus",
  runtimeInstanceId: "rt-a", hostIncarnation: "pid:1:1", payload: {},
  timings: { receivedAt: new Date(0).toISOString(), handledMs: 0 } } }), "127.0.0.1", 0);
const r = await fetch("http://127.0.0.1:" + s.port + "/runtime-instance/commands", { method: "POST",
  headers: { "content-type": "application/json" }, body: "{}" });
const loaded = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ status: r.status, body: await r.json(),
  compilers: loaded.filter((k) => /node_modules\\/(ajv|@fastify\\/ajv-compiler|@fastify\\/fast-json-stringify-compiler)\\//.test(k)) }));
await s.server.close();
`;

describe("HTTP command transport start-up (a real listener in a child process)", () => {
  it("serves a command through the zod result schema without loading a JSON-schema compiler (ajv, fast-json-stringify's compiler)", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", PROBE], {
      encoding: "utf8",
      timeout: 60_000,
    });
    const probe = JSON.parse(out.trim().split("\n").at(-1)!) as {
      status: number;
      body: Record<string, unknown>;
      compilers: string[];
    };
    expect(probe.status).toBe(200);
    expect(probe.body).toMatchObject({ success: true, operation: "GetQueueStatus", runtimeInstanceId: "rt-a" });
    expect(probe.compilers).toEqual([]);
  });
});
