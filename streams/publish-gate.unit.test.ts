import { describe, expect, it } from "vitest";
import { immediatePublish, publishGate } from "./publish-gate.ts";

// Pure scheduling logic with fake sends: proves no transport (the conditional appends through it are
// proven against a real nats-server in test/int/event-store.int.test.ts).
describe("publishGate (fake sends, no transport)", () => {
  it("while a send awaits its answer, holds sends made in one turn of the event loop and sends them together, in order, each settling on its own", async () => {
    const gate = publishGate();
    let answer!: () => void;
    const first = gate(() => new Promise<void>((ok) => (answer = ok)));
    const sent: number[] = [];
    const send = (i: number) => () => {
      sent.push(i);
      return i === 2 ? Promise.reject(new Error("refused 2")) : Promise.resolve(i * 10);
    };
    // Made from different microtasks, as executions resuming one after another make them.
    const results = [0, 1, 2, 3].map((i) => Promise.resolve().then(() => gate(send(i))));
    await Promise.resolve();
    await Promise.resolve();
    expect(sent).toEqual([]);
    const settled = await Promise.allSettled(results);
    expect(sent).toEqual([0, 1, 2, 3]);
    expect(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message))).toEqual([
      0,
      10,
      "refused 2",
      30,
    ]);
    answer();
    await first;
  });

  it("with no send awaiting its answer, sends at once (one execution alone pays no turn of the event loop), and holds the next ones while it is in flight", async () => {
    const gate = publishGate();
    const sent: string[] = [];
    let answerA!: () => void;
    const a = gate(() => {
      sent.push("a");
      return new Promise<void>((ok) => (answerA = ok));
    });
    expect(sent).toEqual(["a"]);
    const b = gate(async () => void sent.push("b"));
    await Promise.resolve();
    expect(sent).toEqual(["a"]);
    await b;
    expect(sent).toEqual(["a", "b"]);
    answerA();
    await a;
    // Nothing in flight again: at once.
    const c = gate(async () => void sent.push("c"));
    expect(sent).toEqual(["a", "b", "c"]);
    await c;
    await expect(gate(() => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    void gate(async () => void sent.push("d"));
    expect(sent.at(-1)).toBe("d");
  });

  it("a send made after a release waits for the next turn, never for a held send's answer", async () => {
    const gate = publishGate();
    const sent: string[] = [];
    let answerA!: (v: string) => void;
    const a = gate(() => {
      sent.push("a");
      return new Promise<string>((ok) => (answerA = ok));
    });
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual(["a"]);
    const b = gate(async () => {
      sent.push("b");
      return "b";
    });
    expect(await b).toBe("b");
    expect(sent).toEqual(["a", "b"]);
    answerA("a");
    expect(await a).toBe("a");
  });

  it("immediatePublish sends at once", async () => {
    let sent = false;
    const p = immediatePublish(async () => (sent = true));
    expect(sent).toBe(true);
    expect(await p).toBe(true);
  });
});
