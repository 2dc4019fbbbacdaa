// Sums the vitest JSON reports of every tier into one closing line: "N passed, N failed[, N skipped]".
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
let passed = 0,
  failed = 0,
  skipped = 0;
const rows = [];
const failures = [];
// CI shows only the tail of the output: repeat each failure's first lines here, without colours.
// eslint-disable-next-line no-control-regex -- strips ANSI colour codes
const plain = (s) => String(s).replace(/\u001b\[[0-9;]*m/g, "");
const firstLines = (s) =>
  plain(s)
    .split("\n")
    .filter((l) => l.trim())
    .slice(0, 4)
    .map((l) => `      ${l.trim().slice(0, 400)}`);
for (const f of readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()) {
  const r = JSON.parse(readFileSync(join(dir, f), "utf8"));
  const p = r.numPassedTests ?? 0,
    x = r.numFailedTests ?? 0,
    s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // a suite that failed to load counts as a failure even when it declared no test
  const broken = (r.testResults ?? []).filter(
    (t) => t.status === "failed" && (t.assertionResults ?? []).length === 0,
  ).length;
  for (const t of r.testResults ?? []) {
    if (t.status === "failed" && (t.assertionResults ?? []).length === 0)
      failures.push(`  ${t.name}`, ...firstLines(t.message ?? ""));
    for (const a of t.assertionResults ?? [])
      if (a.status === "failed") failures.push(`  ${a.fullName}`, ...firstLines((a.failureMessages ?? []).join("\n")));
  }
  passed += p;
  failed += x + broken;
  skipped += s;
  rows.push(`  ${f.replace(".json", "").padEnd(6)} ${p} passed, ${x + broken} failed${s ? `, ${s} skipped` : ""}`);
}
if (failures.length) console.log(["failed tests:", ...failures].join("\n"));
console.log(["test tiers:", ...rows].join("\n"));
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
