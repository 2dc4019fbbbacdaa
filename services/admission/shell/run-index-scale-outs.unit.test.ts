import { describe, expect, it } from "vitest";
import { encodeEvent, type DroverEvent } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { RunIndex } from "./run-index.ts";

// Proves no transport: the follower's deliveries are fed to `apply` as the messages it reads.
const clock = { now: () => new Date(1_000) };
const requested = event("scaleout.requested");
const { tenantId, data } = requested;
const requestId = data.requestId as string;
const at = (seq: number, e: DroverEvent) => ({ seq, time: new Date(seq * 1_000), event: e });
const delivered = (idx: RunIndex, seq: number, e: DroverEvent, name: string) =>
  idx.apply({ subject: `drover.events.scaleout.${tenantId}.${requestId}.${name}`, seq, data: encodeEvent(e) });

describe("RunIndex scale-out requests (in memory, no transport): a history read from the log never moves one back", () => {
  it("a history read before the follower delivered the request's end leaves the end the follower folded", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    // Admission's own append (or a read behind a conflict) returned the request as it was then...
    const read = [at(10, requested), at(11, event("scaleout.observed"))];
    // ...and the follower delivered the provisioner's rejection before the history was folded into the index.
    delivered(idx, 10, requested, "requested");
    delivered(idx, 11, event("scaleout.observed"), "observed");
    delivered(idx, 12, event("scaleout.rejected"), "rejected");
    expect(idx.scaleOuts.get(requestId)?.status).toBe("rejected");
    // Before: the request was open again in the index, for good (the follower never delivers 12 twice),
    // and every run of the key waited on it until its `expiresAt`.
    const entry = idx.resetScaleOut(tenantId as string, requestId, read);
    expect(entry).toMatchObject({ status: "rejected", lastSeq: 12 });
    expect(idx.scaleOuts.get(requestId)?.status).toBe("rejected");
  });

  it("a history that goes further than the index replaces what the index held", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    delivered(idx, 10, requested, "requested");
    const entry = idx.resetScaleOut(tenantId as string, requestId, [
      at(10, requested),
      at(11, event("scaleout.observed")),
      at(12, event("scaleout.expired")),
    ]);
    expect(entry).toMatchObject({ status: "expired", lastSeq: 12, endedMs: 12_000, dedupeKey: data.dedupeKey });
  });
});
