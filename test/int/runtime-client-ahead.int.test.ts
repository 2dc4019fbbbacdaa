import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeCommandResult } from "../../contracts/index.ts";
import { closeRuntimeClients, connectAhead, freeConnections, sendRawCommand } from "../../platform/runtime-client.ts";
import { startHttpServer, type CommandHandler } from "../../services/runtime/index.ts";
import { eventually } from "../support/streams.ts";

const BURST = 12;

describe("a burst of runtime commands over HTTP (boundary: real loopback sockets, the runtime's own Fastify command server)", () => {
  let server: Awaited<ReturnType<typeof startHttpServer>>["server"];
  let endpoint: string;
  /** Turns of this process's event loop while it is kept busy (each a timer callback of 10 ms of work). */
  let turn = 0;
  const receivedAt: number[] = [];

  beforeAll(async () => {
    const handler: CommandHandler = async (cmd) => {
      receivedAt.push(turn);
      const result: RuntimeCommandResult = {
        success: true,
        operation: String((cmd.body as { operation?: unknown }).operation),
        runtimeInstanceId: "rt-ahead",
        hostIncarnation: "pid:1:1",
        payload: {},
        timings: { receivedAt: new Date(0).toISOString(), handledMs: 0 },
      } as RuntimeCommandResult;
      return { httpStatus: 200, result };
    };
    const started = await startHttpServer(handler, "127.0.0.1", 0);
    server = started.server;
    const port = started.port;
    endpoint = `127.0.0.1:${port}`;
  });
  afterAll(async () => {
    closeRuntimeClients();
    await server.close();
  });

  it("reaches a busy server in one or two event-loop turns when its connections were opened ahead (a Node server accepts one new connection per turn)", async () => {
    for (let i = 0; i < BURST; i++) connectAhead(endpoint, "http");
    await eventually(`${BURST} connections free`, async () => (freeConnections(endpoint) >= BURST ? true : undefined));
    // The server's loop is busy from here on: every turn does 10 ms of synchronous work.
    const busy = setInterval(() => {
      turn++;
      const end = Date.now() + 10;
      while (Date.now() < end);
    }, 0);
    try {
      const answers = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          sendRawCommand(endpoint, "http", { operation: "GetQueueStatus", i }, {}, 10_000),
        ),
      );
      expect(answers.every((a) => a.success)).toBe(true);
    } finally {
      clearInterval(busy);
    }
    expect(receivedAt).toHaveLength(BURST);
    // On new connections the twelve arrive one turn apart (11 turns or more from the first to the last).
    expect(Math.max(...receivedAt) - Math.min(...receivedAt)).toBeLessThanOrEqual(2);
    // Every command used a connection opened ahead: none is left over, none was added.
    expect(freeConnections(endpoint)).toBe(BURST);
  });
});
