import { describe, expect, it } from "vitest";
import { startTimeFromStat } from "../../platform/process-incarnation.ts";

// Unit: parsing of /proc/<pid>/stat lines (no process is read).
describe("startTimeFromStat", () => {
  it("takes field 22 (starttime), counting fields after the last ')' so a comm with spaces or parentheses cannot shift it", () => {
    const rest = "R 1 1 1 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 56471 3133440 379";
    expect(startTimeFromStat(`20213 (cat) ${rest}`)).toBe("56471");
    expect(startTimeFromStat(`20213 (node (worker) x) ${rest}`)).toBe("56471");
  });

  it("refuses a line without a starttime instead of guessing", () => {
    expect(() => startTimeFromStat("garbage")).toThrow(/unparseable/);
    expect(() => startTimeFromStat("1 (x) R 1 2")).toThrow(/no starttime/);
  });
});
