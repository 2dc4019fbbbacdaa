import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { followLog } from "../../platform/hosts/runtime-log.ts";

// Boundary: real files and the kernel's change notifications (inotify), as a runtime's log is
// written by the runtime process and followed by its provisioner.
const DIR = mkdtempSync(join(tmpdir(), "runtime-log-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const until = async (ok: () => boolean, ms: number): Promise<void> => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe("followLog: a runtime's log file followed from its end (real files, inotify)", () => {
  it("a line written after the follow starts arrives on the change, long before the fallback poll", async () => {
    const path = join(DIR, "a.log");
    writeFileSync(path, "before the follow\n");
    const lines: string[] = [];
    // A fallback poll of a minute: only the change notification can deliver the line within 5 s.
    const out = await followLog(path, (l) => lines.push(l), 60_000);
    try {
      appendFileSync(path, '{"event":"listening"}\n');
      await until(() => lines.length > 0, 5_000);
      expect(lines).toEqual(['{"event":"listening"}']);
    } finally {
      await out.stop();
    }
  });

  it("joins a line written in pieces, tells listeners, and reads what was written just before stop()", async () => {
    const path = join(DIR, "b.log");
    writeFileSync(path, "");
    const lines: string[] = [];
    const heard: string[] = [];
    const out = await followLog(path, (l) => lines.push(l), 60_000);
    out.onLine((l) => heard.push(l));
    appendFileSync(path, "par");
    await new Promise((r) => setTimeout(r, 50));
    appendFileSync(path, "tial\nsecond\n");
    await until(() => lines.length === 2, 5_000);
    appendFileSync(path, "the exit reason\n");
    await out.stop();
    expect(lines).toEqual(["partial", "second", "the exit reason"]);
    expect(heard).toEqual(lines);
    expect(out.tail()).toBe("partial\nsecond\nthe exit reason\n");
  });
});
