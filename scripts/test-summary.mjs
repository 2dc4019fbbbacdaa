// Sums the vitest JSON reports of every tier into one closing line: "N passed, N failed[, N skipped]".
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
let passed = 0, failed = 0, skipped = 0;
const rows = [];
for (const f of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
  const r = JSON.parse(readFileSync(join(dir, f), "utf8"));
  const p = r.numPassedTests ?? 0, x = r.numFailedTests ?? 0, s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // a suite that failed to load counts as a failure even when it declared no test
  const broken = (r.testResults ?? []).filter((t) => t.status === "failed" && (t.assertionResults ?? []).length === 0).length;
  passed += p; failed += x + broken; skipped += s;
  rows.push(`  ${f.replace(".json", "").padEnd(6)} ${p} passed, ${x + broken} failed${s ? `, ${s} skipped` : ""}`);
}
console.log(["test tiers:", ...rows].join("\n"));
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
