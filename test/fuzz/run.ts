import fc from "fast-check";
import { fuzzCase, runCase } from "./event-fuzz.ts";

/**
 * `make fuzz`: the event fuzz target, long. FUZZ_RUNS cases (default 20 000, each up to 40
 * messages), FUZZ_SEED to reproduce a run (printed); exit 1 with fast-check's shrunk counterexample
 * on the first failure.
 */
const runs = Number(process.env.FUZZ_RUNS ?? 20_000);
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
let decoded = 0;
let rejected = 0;
let messages = 0;
const t0 = performance.now();
try {
  fc.assert(
    fc.property(fuzzCase, (m) => {
      const r = runCase(m);
      decoded += r.decoded;
      rejected += r.rejected;
      messages += m.length;
    }),
    { numRuns: runs, seed },
  );
} catch (e) {
  console.error(String((e as Error).message ?? e));
  console.error(`fuzz: FAIL (seed ${seed})`);
  process.exit(1);
}
const s = (performance.now() - t0) / 1000;
console.log(
  `fuzz: PASS ${runs} cases, ${messages} messages (${decoded} decoded into the folds, ${rejected} refused by the decoders) in ${s.toFixed(1)} s, seed ${seed}`,
);
