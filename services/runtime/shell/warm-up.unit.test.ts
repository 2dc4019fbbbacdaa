import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { ROUTING_HEADER, TOKEN_HEADER } from "../../../contracts/index.ts";
import { HTTP_COMMAND_PATH } from "../../../platform/runtime-grpc-service.ts";
import type { CommandHandler } from "./command-handler.ts";
import { prepareCommandServer, UNBOUND, warmUpParsers, WARM_UP_COMMANDS, WARM_UP_EVENTS } from "./warm-up.ts";

// Unit tier: pure CPU on sample values; proves the samples are the paths a bound runtime takes, not any timing.
describe("a pooled runtime's parser warm-up", () => {
  it("compiles every exec and run event schema and parses one accepted sample of each run-carrying command and the probe", () => {
    expect(WARM_UP_EVENTS).toBeGreaterThan(20);
    expect(warmUpParsers()).toEqual({ events: WARM_UP_EVENTS, commands: WARM_UP_COMMANDS });
    expect(WARM_UP_COMMANDS).toBe(3);
  });
});

const command = { operation: "GetQueueStatus", payload: {}, runtimeInstanceId: "rt-a-1", correlationId: "c-1" };

function post(port: number): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((ok, fail) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: HTTP_COMMAND_PATH,
        headers: { "content-type": "application/json", [ROUTING_HEADER]: "rt-a-1", [TOKEN_HEADER]: "t" },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => ok({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }));
      },
    );
    req.on("error", fail);
    req.end(JSON.stringify(command));
  });
}

// The in-process requests never leave the process; serving binds a real loopback listener.
describe("a pooled runtime's command server, built before its binding", () => {
  it("refuses every command as misdirected until bound, then serves the bound handler on its listener", async () => {
    const prepared = await prepareCommandServer("pid:1:2");
    expect(prepared.server.server.listening).toBe(false);
    const before = await prepared.server.inject({
      method: "POST",
      url: HTTP_COMMAND_PATH,
      headers: { "content-type": "application/json", [ROUTING_HEADER]: "rt-a-1", [TOKEN_HEADER]: "t" },
      payload: JSON.stringify(command),
    });
    expect(before.statusCode).toBe(421);
    expect(before.json()).toMatchObject({
      success: false,
      runtimeInstanceId: UNBOUND,
      failureReason: "runtime-misdirected",
    });
    const seen: unknown[] = [];
    const bound: CommandHandler = async (cmd) => {
      seen.push(cmd.body);
      return {
        httpStatus: 200,
        result: {
          success: true,
          operation: "GetQueueStatus",
          runtimeInstanceId: "rt-a-1" as never,
          hostIncarnation: "pid:1:2" as never,
          payload: {},
          timings: { receivedAt: new Date(0).toISOString(), handledMs: 0 },
        },
      };
    };
    const served = await prepared.serve(bound, "127.0.0.1", 0);
    try {
      const after = await post(served.port);
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ success: true, runtimeInstanceId: "rt-a-1" });
      expect(seen).toEqual([command]);
    } finally {
      await served.server.close();
    }
  });
});
