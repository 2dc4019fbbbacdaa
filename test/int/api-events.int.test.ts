import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { runRef, runtimeRef } from "../../streams/subjects.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

interface Frame {
  id?: string;
  event: string;
  data: string;
}

/**
 * Reads SSE frames from a live `GET /v1/events` until `until` accepts the frames read so far
 * (e.g. "the caught-up marker arrived"), then disconnects. Waits on frames, never on time; the
 * test timeout is the deadline.
 */
async function readFeed(
  base: string,
  headers: Record<string, string>,
  until: (frames: Frame[]) => boolean,
  query = "",
): Promise<Frame[]> {
  const abort = new AbortController();
  const res = await fetch(`${base}/v1/events${query}`, { headers, signal: abort.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const frames: Frame[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    while (!until(frames)) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const field = (name: string) =>
          raw
            .split("\n")
            .find((l) => l.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        const data = field("data");
        if (data !== undefined) frames.push({ id: field("id"), event: field("event") ?? "message", data });
      }
    }
  } finally {
    abort.abort();
  }
  return frames;
}

const caughtUp = (frames: Frame[]) => frames.some((f) => f.event === "caught-up");
const events = (frames: Frame[]) =>
  frames
    .filter((f) => f.event === "message")
    .map((f) => JSON.parse(f.data) as { seq: number; event: { type: string; tenantId?: string } });

describe("api event feed (SSE) against a real nats-server", () => {
  let fx: ApiFixture;
  let base: string;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"));
    base = await fx.app.listen({ host: "127.0.0.1", port: 0 });
  });
  afterAll(async () => {
    await fx.close();
  });

  const submit = async (who: "acme" | "globex") =>
    (
      await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth(who), payload: { dag: validDag } })
    ).json() as { sharedRunId: string; lastSeq: number };

  it("streams a tenant's events with id = stream sequence and resumes after Last-Event-ID with exactly the later events", async () => {
    const runs = [await submit("acme"), await submit("globex"), await submit("acme"), await submit("acme")];
    const all = events(await readFeed(base, auth("acme"), caughtUp));
    expect(all.map((e) => e.seq)).toEqual([runs[0]!.lastSeq, runs[2]!.lastSeq, runs[3]!.lastSeq]);
    expect(all.every((e) => e.event.tenantId === "acme")).toBe(true);
    const resumed = await readFeed(base, { ...auth("acme"), "last-event-id": String(runs[0]!.lastSeq) }, caughtUp);
    expect(resumed.filter((f) => f.event === "message").map((f) => Number(f.id))).toEqual([
      runs[2]!.lastSeq,
      runs[3]!.lastSeq,
    ]);
  });

  it("delivers events appended after catching up, live", async () => {
    const run = await submit("acme");
    let appended = false;
    const frames = await readFeed(base, { ...auth("acme"), "last-event-id": String(run.lastSeq) }, (fs) => {
      if (caughtUp(fs) && !appended) {
        appended = true;
        void fx.store.append(
          runRef(TenantId.parse("acme"), run.sharedRunId),
          event("run.cancelled", { tenantId: TenantId.parse("acme") }),
          { expectedSeq: run.lastSeq },
        );
      }
      return events(fs).length > 0;
    });
    expect(events(frames).map((e) => e.event.type)).toEqual(["run.cancelled"]);
  });

  it("filters ?types= on the server (NATS consumer filters on those subjects): caught-up first, then only those events", async () => {
    const run = await submit("acme");
    let appended = false;
    let filters: readonly string[] | undefined;
    const frames = await readFeed(
      base,
      { ...auth("acme"), "last-event-id": String(run.lastSeq - 1) },
      (fs) => {
        if (caughtUp(fs) && !appended) {
          appended = true;
          void (async () => {
            // The feed's ordered consumer, as the server holds it: it filters on the types' subjects only.
            for await (const c of fx.jsm.consumers.list(fx.layout.eventStream))
              if (c.config.filter_subjects?.some((f) => f.endsWith(".cancelled"))) filters = c.config.filter_subjects;
            await fx.store.append(
              runRef(TenantId.parse("acme"), run.sharedRunId),
              event("run.cancelled", { tenantId: TenantId.parse("acme") }),
              { expectedSeq: run.lastSeq },
            );
          })();
        }
        return events(fs).length > 0;
      },
      "?types=run.cancelled,run.completed,runtime.registered,not-a-type",
    );
    // The stored run.submitted is not sent at all: caught-up comes first.
    expect(frames.map((f) => f.event)).toEqual(["caught-up", "message"]);
    expect(events(frames).map((e) => e.event.type)).toEqual(["run.cancelled"]);
    const p = fx.layout.eventPrefix;
    expect(filters).toEqual([`${p}.run.acme.*.cancelled`, `${p}.run.acme.*.completed`]);
  });

  it("gives a tenant with no events of its own an empty feed up to caught-up, whatever other tenants wrote", async () => {
    await submit("acme");
    const fresh = await apiFixture(inject("natsUrl"));
    try {
      const url = await fresh.app.listen({ host: "127.0.0.1", port: 0 });
      await fresh.app.inject({ method: "POST", url: "/v1/runs", headers: auth("acme"), payload: { dag: validDag } });
      // A runtime named like the tenant: its subject matches <prefix>.*.globex.>, yet it is not globex's.
      await fresh.store.append(runtimeRef("globex"), event("runtime.registered"), { expectedSeq: 0 });
      expect(events(await readFeed(url, auth("globex"), caughtUp))).toEqual([]);
      expect(events(await readFeed(url, auth("operator"), caughtUp)).map((e) => e.event.type)).toEqual([
        "run.submitted",
        "runtime.registered",
      ]);
    } finally {
      await fresh.close();
    }
  });

  it("refuses a malformed Last-Event-ID, a tenant naming another tenant, and a missing token before streaming", async () => {
    const bad = await fx.app.inject({ url: "/v1/events", headers: { ...auth("acme"), "last-event-id": "12abc" } });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, "contract-violation"]);
    expect((await fx.app.inject({ url: "/v1/events?tenant=globex", headers: auth("acme") })).statusCode).toBe(403);
    expect((await fx.app.inject({ url: "/v1/events" })).statusCode).toBe(401);
  });
});
