import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";

/**
 * The dashboard's first call (`GET /v1/me`) and the operator's queue depth (`GET /v1/queue`, from
 * the API's projection of run subjects) over a real nats-server.
 */
describe("api /v1/me and /v1/queue against a real nats-server", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), {
      quota: true,
      tenants: [{ tenantId: TenantId.parse("acme") }, { tenantId: TenantId.parse("globex") }],
    });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("says who the token is: a tenant its tenant, an operator its name and the configured tenants", async () => {
    expect((await fx.app.inject({ url: "/v1/me", headers: auth("acme") })).json()).toEqual({
      role: "tenant",
      tenantId: "acme",
    });
    expect((await fx.app.inject({ url: "/v1/me", headers: auth("operator") })).json()).toEqual({
      role: "operator",
      name: "ops",
      tenants: ["acme", "globex"],
    });
    expect((await fx.app.inject({ url: "/v1/me" })).statusCode).toBe(401);
  });

  it("counts each tenant's runs waiting for placement, read-your-writes, and only for operators", async () => {
    const submit = (who: "acme" | "globex") =>
      fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth(who), payload: { dag: validDag } });
    for (const who of ["acme", "acme", "globex"] as const) expect((await submit(who)).statusCode).toBe(201);
    // No admission runs here: every submitted run still waits.
    const queue = await fx.app.inject({ url: "/v1/queue", headers: auth("operator") });
    expect(queue.statusCode).toBe(200);
    expect(queue.json()).toEqual({ total: 3, byTenant: { acme: 2, globex: 1 } });
    expect((await fx.app.inject({ url: "/v1/queue", headers: auth("acme") })).statusCode).toBe(403);
    // A cancel request alone does not take a run out of the queue: admission's `run.cancelled` does (the fold's unit test).
    const id = (await submit("globex")).json().sharedRunId as string;
    const cancel = await fx.app.inject({
      method: "POST",
      url: `/v1/runs/${id}/cancel`,
      headers: auth("globex"),
      payload: {},
    });
    expect(cancel.statusCode).toBe(202);
    const after = await fx.app.inject({ url: "/v1/queue", headers: auth("operator") });
    expect(after.json()).toEqual({ total: 4, byTenant: { acme: 2, globex: 2 } });
  });
});
