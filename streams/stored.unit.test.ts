import { createRequire } from "node:module";
import { headers, type Msg as CoreMsg } from "@nats-io/nats-core";
import { DirectMsgImpl, type JsMsg } from "@nats-io/jetstream/internal";
import { describe, expect, it } from "vitest";
import { encodeEvent } from "../contracts/index.ts";
import { event } from "../test/support/streams.ts";
import { DEFAULT_LAYOUT } from "./layout.ts";
import { toStoredEvent } from "./stored.ts";
import { eventSubject, runRef } from "./subjects.ts";

// The client's own message classes, no transport: a consumer's message (JsMsg, its stored time in its
// reply subject) and a Direct Get's (its stored time in a header) of one stored message. The package
// exports no JsMsg constructor, so it is loaded from the file beside the package's entry point.
const lib = createRequire(import.meta.url)
  .resolve("@nats-io/jetstream")
  .replace(/mod\.js$/, "jsmsg.js");
const { toJsMsg } = createRequire(import.meta.url)(lib) as { toJsMsg: (m: CoreMsg) => JsMsg };

const submitted = event("run.submitted");
const subject = eventSubject(DEFAULT_LAYOUT, runRef(submitted.tenantId, submitted.data.sharedRunId), submitted.type);
const data = encodeEvent(submitted);

/** Stream sequence 7 stored at `nanos` (ns since the epoch), as a consumer delivers it. */
function viaConsumer(nanos: bigint): JsMsg {
  const reply = `$JS.ACK.EV.c1.1.7.7.${nanos}.0`;
  return toJsMsg({ subject, reply, data, sid: 1, headers: undefined } as unknown as CoreMsg);
}

/** The same message as a Direct Get answers it (RFC 3339 with nanoseconds, as nats-server writes it). */
function viaDirectGet(nanos: bigint): DirectMsgImpl {
  const ms = nanos / 1_000_000n;
  const iso = new Date(Number(ms)).toISOString().replace(/\.\d{3}Z$/, "");
  const h = headers();
  h.set("Nats-Stream", "EV");
  h.set("Nats-Subject", subject);
  h.set("Nats-Sequence", "7");
  h.set("Nats-Time-Stamp", `${iso}.${String(nanos % 1_000_000_000n).padStart(9, "0")}Z`);
  return new DirectMsgImpl({ subject: "reply", data, headers: h } as unknown as CoreMsg);
}

describe("toStoredEvent: a stored message's time, however it was read", () => {
  // Seen on a real nats-server: 16 of 100 000 messages read one millisecond later through a consumer
  // than through Direct Get (the client parses the reply's 19-digit nanoseconds into a double).
  it.each([1796541829688999997n, 1796541829744999897n, 1796541830000000000n, 1796541830123456789n])(
    "is the stored nanoseconds cut to the millisecond, through a consumer and through Direct Get alike (%s ns)",
    (nanos) => {
      const ms = new Date(Number(nanos / 1_000_000n)).toISOString();
      expect(toStoredEvent(viaDirectGet(nanos)).time.toISOString()).toBe(ms);
      expect(toStoredEvent(viaConsumer(nanos)).time.toISOString()).toBe(ms);
    },
  );
});
