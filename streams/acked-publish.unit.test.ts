import { headers } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { conditionalHeaders, type HeaderBlock } from "./acked-publish.ts";

// The conditional publish's header block against the client's own encoding (no transport).
describe("conditionalHeaders: the client's header bytes for a conditional publish", () => {
  const client = (msgID: string, stream: string, seq: number, subject: string) => {
    const h = headers();
    h.set("Nats-Msg-Id", msgID);
    h.set("Nats-Expected-Stream", stream);
    h.set("Nats-Expected-Last-Subject-Sequence", String(seq));
    h.set("Nats-Expected-Last-Subject-Sequence-Subject", subject);
    return (h as unknown as HeaderBlock).encode();
  };
  it.each([
    ["rt-a.e0:exec:exec-0123:41", "DROVER_EVENTS", 41, "drover.exec.t1.exec-0123.>"],
    ["api:run:r-1:0", "DROVER_EVENTS_e2e-ab12", 0, "drover.run.t1.r-1.>"],
    ["  padded id ", " S ", 7, " drover.run.t.r.> "],
  ])("encodes %s as nats.js's headers() with the same four sets does", (msgID, stream, seq, subject) => {
    const expect_ = { streamName: stream, lastSubjectSequence: seq, lastSubjectSequenceSubject: subject };
    expect(Buffer.from(conditionalHeaders(msgID, expect_).encode()).toString()).toBe(
      Buffer.from(client(msgID, stream, seq, subject)).toString(),
    );
  });
  it("refuses a value with a line break, as the client does (no header can be injected)", () => {
    const ok = { streamName: "S", lastSubjectSequence: 1, lastSubjectSequenceSubject: "a.>" };
    expect(() => client("id\r\nX: y", "S", 1, "a.>")).toThrow();
    expect(() => conditionalHeaders("id\r\nX: y", ok)).toThrow(/cannot contain/);
    expect(() => conditionalHeaders("id", { ...ok, streamName: "S\n" })).toThrow(/cannot contain/);
    expect(() => conditionalHeaders("id", { ...ok, lastSubjectSequenceSubject: "a.>\r" })).toThrow(/cannot contain/);
  });
});
