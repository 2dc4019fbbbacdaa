import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** OpenAPI, health and metrics of the API over a real nats-server (no read models: reported degraded). */
describe("api OpenAPI document, /healthz, /readyz and /metrics against a real nats-server", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"));
  });
  afterAll(async () => {
    await fx.close();
  });

  it("serves an OpenAPI 3.1 document generated from the zod schemas, with response schemas on the run routes", async () => {
    const res = await fx.app.inject({ url: "/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as Json;
    expect(doc.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/runs",
      "/v1/runs/{id}",
      "/v1/runs/{id}/events",
      "/v1/runs/{id}/cancel",
      "/v1/runs/{id}/rerun",
      "/v1/events",
    ])
      expect(Object.keys(doc.paths)).toContain(path);
    const list = doc.paths["/v1/runs"].get;
    expect(list.parameters.map((p: Json) => p.name)).toEqual(
      expect.arrayContaining(["status", "label", "since", "cursor", "limit"]),
    );
    expect(list.responses["200"].content["application/json"].schema.properties).toHaveProperty("next");
    const detail = doc.paths["/v1/runs/{id}"].get.responses["200"].content["application/json"].schema;
    expect(detail.properties.steps.items.properties.state.enum).toEqual([
      "pending",
      "running",
      "waiting-retry",
      "completed",
      "failed",
      "skipped",
      "cancelled",
    ]);
    // a real answer has every property the document requires
    const sub = await fx.app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: auth("acme"),
      payload: { dag: validDag },
    });
    const got = (
      await fx.app.inject({ url: `/v1/runs/${sub.json().sharedRunId}`, headers: auth("acme") })
    ).json() as Json;
    for (const key of detail.required as string[]) expect(got).toHaveProperty(key);
    expect(got.steps.map((s: Json) => s.state)).toEqual(["pending", "pending"]);
  });

  it("answers /healthz, /readyz (event stream ok, read models degraded) and Prometheus /metrics", async () => {
    expect((await fx.app.inject({ url: "/healthz" })).json()).toEqual({ status: "ok" });
    const ready = await fx.app.inject({ url: "/readyz" });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks.eventStream).toMatch(/^ok/);
    expect(ready.json().checks.readModels).toMatch(/^degraded/);
    const metrics = await fx.app.inject({ url: "/metrics" });
    expect(metrics.headers["content-type"]).toContain("text/plain");
    expect(metrics.body).toMatch(/drover_api_requests_total\{method="GET",route="\/readyz",status="200"\} 1/);
    expect(metrics.body).toMatch(/drover_event_stream_last_sequence [1-9]/);
    expect(metrics.body).toContain("drover_read_model_lag_events -1");
  });
});
