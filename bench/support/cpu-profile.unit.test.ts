import { describe, expect, it } from "vitest";
import { processOfProfile, summarizeWindow, type CpuProfile } from "./cpu-profile.ts";

const BUNDLE = "file:///repo/.run/build/service-admission-0123456789abcdef.mjs";
const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });
// root → handle (ours) → decode (ours); root → send (ours) → write (ioredis) → writev (native); root → (idle);
// root → writeOrBuffer (node's internal streams: not ours).
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)", "", -1), children: [2, 4, 7, 8] },
    { id: 2, callFrame: frame("handle", BUNDLE, 9), children: [3] },
    { id: 3, callFrame: frame("decode", BUNDLE, 19) },
    { id: 4, callFrame: frame("send", BUNDLE, 29), children: [5] },
    { id: 5, callFrame: frame("write", "file:///repo/node_modules/ioredis/built/Redis.js", 4), children: [6] },
    { id: 6, callFrame: frame("writev", "", -1) },
    { id: 7, callFrame: frame("(idle)", "", -1) },
    { id: 8, callFrame: frame("writeOrBuffer", "node:internal/streams/writable", 547) },
  ],
  startTime: 1_000,
  endTime: 2_000,
  // At 1 100, 1 200, … 1 800 µs.
  samples: [3, 3, 6, 7, 2, 6, 8, 7],
  timeDeltas: [100, 100, 100, 100, 100, 100, 100, 100],
};

describe("V8 CPU profiles cut to a window (bench/support/cpu-profile.ts; pure, profiles built in memory)", () => {
  it("names the process from its bundle, and a runtime from its CommonJS bundle", () => {
    expect(processOfProfile(profile)).toBe("admission");
    const runtime = { ...profile, nodes: [{ id: 1, callFrame: frame("x", "/repo/.run/build/runtime-0a1b2c.cjs") }] };
    expect(processOfProfile(runtime)).toBe("runtime");
    expect(processOfProfile({ ...profile, nodes: [{ id: 1, callFrame: frame("x", "/other.js") }] })).toBeUndefined();
  });

  it("counts busy and idle samples in the window only, by top frame and by owner (package, else our nearest function, else node)", () => {
    const s = summarizeWindow(profile, 1_150, 1_750);
    // In the window: 1 200 (decode), 1 300 (writev), 1 400 (idle), 1 500 (handle), 1 600 (writev), 1 700 (writeOrBuffer).
    expect(s).toEqual({
      busy: 5,
      idle: 1,
      self: [
        ["writev :0", 2],
        ["decode service-admission-0123456789abcdef.mjs:20", 1],
        ["handle service-admission-0123456789abcdef.mjs:10", 1],
        ["writeOrBuffer writable:548", 1],
      ],
      owners: [
        ["lib:ioredis", 2],
        ["node", 1],
        ["ours:decode:20", 1],
        ["ours:handle:10", 1],
      ],
    });
    expect(summarizeWindow(profile, 1_150, 1_750, 1).self).toEqual([["writev :0", 2]]);
  });
});
