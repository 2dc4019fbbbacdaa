import { describe, expect, it } from "vitest";
import { Credential, DroverConfig, DroverError } from "../../../contracts/index.ts";
import { DEFAULT_LAYOUT } from "../../../streams/layout.ts";
import type { EventStore } from "../../../streams/types.ts";
import { tokenTable } from "../shell/token-table.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { buildApp } from "./app.ts";

const TOKEN = "token-acme-0123456789";
const failing = (error: unknown): EventStore => {
  const fail = async (): Promise<never> => {
    throw error;
  };
  return {
    append: fail,
    appendAll: fail,
    appendAtomic: fail,
    read: fail,
    lastSeq: fail,
    lastOfType: fail,
    replay: fail,
  };
};
const app = (store: EventStore) =>
  buildApp({
    config: DroverConfig.parse({ controlPlaneId: "cp-test" }),
    tokens: tokenTable({ [TOKEN]: Credential.parse({ role: "tenant", tenantId: "acme" }) }, { allowPlaintext: true }),
    layout: DEFAULT_LAYOUT,
    store,
    feed: {
      head: () => Promise.resolve(0),
      follow: () => {
        throw new Error("unused");
      },
    },
    capacity: { descriptors: async () => [], includesReservations: false },
    clock: { now: () => new Date(0) },
    newId: () => "id1",
    instanceId: "api-unit",
  } satisfies ApiDeps);
const get = async (store: EventStore) =>
  (await app(store)).inject({ url: "/v1/runs/run-1", headers: { authorization: `Bearer ${TOKEN}` } });

describe("api error handler", () => {
  it("answers an unknown error as 500 internal without any of its message, stack or cause", async () => {
    const res = await get(failing(new TypeError("secret: mongodb://admin:pw@10.0.0.7 at Socket.connect")));
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      error: {
        code: "internal",
        message: "internal error; the server log has the details",
        retryable: true,
        details: {},
        requestId: "id1",
      },
    });
    expect(res.headers["x-request-id"]).toBe("id1");
    expect(res.body).not.toMatch(/secret|10\.0\.0\.7|Socket/);
  });

  it("maps a DroverError to its catalogue status, code and details, with Retry-After on a 503", async () => {
    const res = await get(
      failing(new DroverError("event-store-unavailable", "JetStream did not answer", { details: { filter: "x" } })),
    );
    expect(res.statusCode).toBe(503);
    expect(res.json().error).toEqual({
      code: "event-store-unavailable",
      message: "JetStream did not answer",
      retryable: true,
      details: { filter: "x" },
      requestId: "id1",
    });
    expect(res.headers["retry-after"]).toBe("1");
  });

  it("answers a stored event that no longer decodes as the server's fault (500), never the caller's contract-violation", async () => {
    const res = await get(
      failing(new DroverError("contract-violation", "event run.submitted is invalid at stream sequence 9")),
    );
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe("internal");
  });
});
