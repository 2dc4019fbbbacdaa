/**
 * FerretDB's CPU per insert command against per document (services/forensics/README.md "Where the
 * projector's CPU goes"): 100 flushes of 50 run versions each, written as one `insertMany` or as two
 * (10 + 40, as a flush wrote new and changed documents before `putDocs`), alternated for `BENCH_ROUNDS`
 * rounds (default 4); prints FerretDB's CPU ms (user + system, from /proc) per 100 flushes.
 */
import { readFileSync } from "node:fs";
import { startFerret } from "../platform/local-servers.ts";
import { readModelClient } from "../platform/read-model-db.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, clock ticks of 10 ms
};

const ferret = await startFerret();
const mongo = readModelClient(ferret.url);
try {
  const c = mongo.db("bench_insert_calls").collection<{ _id: string }>("runs");
  let n = 0;
  const version = () => {
    n += 1;
    return { _id: `k${n}@1`, key: `k${n}`, tenantId: "t", lastSeq: 1, d: JSON.stringify({ pad: "x".repeat(300), n }) };
  };
  for (let round = 0; round < ROUNDS; round++) {
    const out: Record<string, number> = {};
    for (const calls of [1, 2]) {
      const before = cpuMs(ferret.pid);
      for (let i = 0; i < 100; i++) {
        const docs = Array.from({ length: 50 }, version);
        for (const part of calls === 1 ? [docs] : [docs.slice(0, 10), docs.slice(10)])
          await c.insertMany(part, { ordered: false });
      }
      out[`${calls === 1 ? "one" : "two"}_insert_ms`] = cpuMs(ferret.pid) - before;
    }
    console.log(JSON.stringify({ round, ...out }));
  }
} finally {
  await mongo.close();
  await ferret.stop();
}
