import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { DroverConfig } from "../../../contracts/index.ts";
import { DEFAULT_LAYOUT } from "../../../streams/layout.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { tokenTable } from "../shell/token-table.ts";
import { buildApp } from "./app.ts";

const unused = async (): Promise<never> => {
  throw new Error("unused");
};
const store: EventStore = {
  append: unused,
  appendAll: unused,
  appendAtomic: unused,
  read: unused,
  lastSeq: unused,
  lastOfType: unused,
  replay: unused,
};

describe("api request log (Fastify inject, pure: proves no transport)", () => {
  it("writes one line per request, with method, url, status and duration", async () => {
    const lines: Record<string, unknown>[] = [];
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }): void => void warnings.push(`${w.code ?? w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const log = pino({ level: "info" }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const app = await buildApp(
      {
        config: DroverConfig.parse({ controlPlaneId: "cp-test" }),
        tokens: tokenTable({}, { allowPlaintext: true }),
        layout: DEFAULT_LAYOUT,
        store,
        feed: { head: () => Promise.resolve(0), follow: () => ({ [Symbol.asyncIterator]: unused }) as never },
        capacity: { descriptors: async () => [], includesReservations: false },
        clock: { now: () => new Date(0) },
        newId: () => "id1",
        instanceId: "api-unit",
      } satisfies ApiDeps,
      { loggerInstance: log },
    );
    const res = await app.inject({ url: "/nowhere?x=1" });
    expect(res.statusCode).toBe(404);
    expect(lines.map(({ msg, method, url, statusCode, reqId }) => ({ msg, method, url, statusCode, reqId }))).toEqual([
      { msg: "request", method: "GET", url: "/nowhere?x=1", statusCode: 404, reqId: "id1" },
    ]);
    expect(typeof lines[0]!.ms).toBe("number");
    await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
    process.off("warning", onWarning);
    expect(warnings).toEqual([]); // no deprecated option (FSTDEP023: top-level disableRequestLogging)
  });
});
