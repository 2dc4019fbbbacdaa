import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createOutputStore, OUTPUT_CHUNK_BYTES, outputsStreamOf } from "../../platform/output-store.ts";
import { outputsPrefixOf } from "../../platform/output-store.ts";
import type { StoredOutputRef } from "../../contracts/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";

const url = () => inject("natsUrl");
const bytesOf = (n: number, seed: string) =>
  new TextEncoder().encode(seed.repeat(Math.ceil(n / seed.length)).slice(0, n));

describe("a runtime stores and reads only its tenants' outputs (boundary: real nats-server authorization, the outputs stream)", () => {
  let fx: AuthFixture;
  let stream: string;
  let out: string;
  /** A globex output (two chunks), stored by the harness. */
  let foreign: StoredOutputRef;

  beforeAll(async () => {
    fx = await authFixture(url(), 60_000);
    stream = outputsStreamOf(fx.f.layout);
    out = outputsPrefixOf(fx.f.layout);
    foreign = await createOutputStore(fx.f.nc, fx.f.layout).put(
      `globex/${uniqueName("ex")}/fetch`,
      bytesOf(OUTPUT_CHUNK_BYTES + 10, "globex-secret "),
    );
  });
  afterAll(() => fx.close());

  const acmeRuntime = async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    return fx.asRuntime(rt);
  };

  it("stores and reads back its own tenant's multi-chunk output with its minted credentials; a repeated put is a no-op", async () => {
    const store = createOutputStore(await acmeRuntime(), fx.f.layout);
    const bytes = bytesOf(2 * OUTPUT_CHUNK_BYTES + 7, "acme ");
    const ref = await store.put(`acme/${uniqueName("ex")}/fetch`, bytes);
    expect(ref).toMatchObject({ bucket: stream, size: bytes.length });
    expect(Buffer.from(await store.get(ref)).equals(Buffer.from(bytes))).toBe(true);
    expect(await store.put(ref.name.slice(0, ref.name.lastIndexOf("/")), bytes)).toEqual(ref);
    // Write-once on the server: a second write of a stored chunk is refused, whoever writes it.
    expect(await attempt(fx.f.nc, `${out}.acme.${ref.digest}.0`, "tampered")).toMatch(/"err_code":10077/);
    expect(Buffer.from(await store.get(ref)).equals(Buffer.from(bytes))).toBe(true);
  });

  it("cannot read or write another tenant's outputs by any route, and creates no consumer on the outputs stream", async () => {
    const nc = await acmeRuntime();
    await expect(createOutputStore(nc, fx.f.layout).get(foreign)).rejects.toThrow(/permission/i);
    // The harness (a service's rights) reads it: the output is there.
    expect((await createOutputStore(fx.f.nc, fx.f.layout).get(foreign)).length).toBe(foreign.size);
    const g = `${out}.globex.${foreign.digest}`;
    const refused: [string, string][] = [
      [`${g}.9`, "x"],
      [`${out}.globex.${"0".repeat(64)}.0`, "x"],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ seq: 1 })],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ last_by_subj: `${g}.0` })],
      [`$JS.API.DIRECT.GET.${stream}.${g}.>`, ""],
      [`$JS.API.DIRECT.GET.${stream}.${out}.>`, ""],
      [`$JS.API.STREAM.MSG.GET.${stream}`, JSON.stringify({ seq: 1 })],
      [
        `$JS.API.CONSUMER.CREATE.${stream}`,
        JSON.stringify({ stream_name: stream, config: { filter_subject: `${g}.>` } }),
      ],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc.${g}.>`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc.${out}.>`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.CONSUMER.LIST.${stream}`, "{}"],
      [`$JS.API.STREAM.PURGE.${stream}`, "{}"],
      [`$JS.API.STREAM.DELETE.${stream}`, "{}"],
    ];
    // Outputs are read chunk by chunk by the subject-form Direct Get: no consumer on the outputs
    // stream, not even over its own tenant's outputs, and no stream info.
    refused.push(
      [`$JS.API.CONSUMER.CREATE.${stream}.oc.${out}.acme.>`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.CONSUMER.MSG.NEXT.${stream}.oc`, "{}"],
      [`$JS.API.STREAM.INFO.${stream}`, "{}"],
    );
    for (const [s, body] of refused) expect([s, await attempt(nc, s, body)]).toEqual([s, "refused"]);
  });
});
