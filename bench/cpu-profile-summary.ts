/**
 * Where a profiled bench's CPU went, process by process, in one window of V8's monotonic clock:
 *   DROVER_CPU_PROF_DIR=/tmp/p BENCH_RECORD=0 node --import tsx bench/workloads.bench.ts
 *   node --import tsx bench/cpu-profile-summary.ts /tmp/p <startUs> <endUs> [top]
 * with the window the bench printed ("w2 monotonic window (µs, for CPU profiles): <start> <end>").
 * Prints each profile's process, its busy and idle samples in the window, and its top functions (self) and owners
 * (npm package, else our nearest bundled function): bench/support/cpu-profile.ts.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { processOfProfile, summarizeWindow, type CpuProfile } from "./support/cpu-profile.ts";

const [dir, start, end, top] = process.argv.slice(2);
if (!dir || !start || !end) {
  console.error("usage: cpu-profile-summary.ts <profile dir> <startUs> <endUs> [top]");
  process.exit(2);
}
const rows = readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .map((f) => {
    const profile = JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile;
    return { f, name: processOfProfile(profile) ?? "?", s: summarizeWindow(profile, +start, +end, Number(top ?? 12)) };
  })
  .filter((r) => r.s.busy > 0)
  .sort((a, b) => b.s.busy - a.s.busy);
const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)}%`.padStart(6);
for (const { f, name, s } of rows) {
  console.log(`\n== ${name} (${f}): ${s.busy} busy samples, ${s.idle} idle`);
  console.log("  self:");
  for (const [k, n] of s.self) console.log(`  ${pct(n, s.busy)} ${k}`);
  console.log("  by owner:");
  for (const [k, n] of s.owners) console.log(`  ${pct(n, s.busy)} ${k}`);
}
