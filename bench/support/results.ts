import { readFile, rename, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join, resolve } from "node:path";

/** One benchmark figure in bench/results/latest.json (proof-and-bench.md "Benchmarks"). */
export interface Metric {
  readonly unit: string;
  readonly value: number;
  readonly p50?: number;
  readonly p99?: number;
  readonly note?: string;
}

export const RESULTS = resolve(import.meta.dirname, "../results/latest.json");

/**
 * Merges `metrics` into bench/results/latest.json, keeping figures other benchmarks wrote; the
 * file is replaced atomically so a crashed run never leaves half a file.
 */
export async function recordMetrics(metrics: Record<string, Metric>, machine: { nats?: string } = {}): Promise<void> {
  // BENCH_RECORD=0: a measuring run (A/B pairs, traces) prints its figures and leaves the results file alone.
  if (process.env.BENCH_RECORD === "0") return;
  let prev: { metrics?: Record<string, Metric>; machine?: Record<string, unknown> } = {};
  try {
    prev = JSON.parse(await readFile(RESULTS, "utf8")) as typeof prev;
  } catch {
    /* first run */
  }
  const out = {
    at: new Date().toISOString(),
    machine: { ...prev.machine, cpus: cpus().length, node: process.versions.node, ...machine },
    metrics: { ...prev.metrics, ...metrics },
  };
  const tmp = join(resolve(RESULTS, ".."), `latest.${process.pid}.tmp.json`);
  await writeFile(tmp, `${JSON.stringify(out, null, 2)}\n`);
  await rename(tmp, RESULTS);
}

/** Median of numbers (0 for none). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The q-quantile (0..1) of numbers by nearest rank (0 for none). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

/** A latency figure in ms from samples: value = p50, with p50 and p99. */
export function latencyMetric(samples: readonly number[], note: string): Metric {
  const p50 = quantile(samples, 0.5);
  return { unit: "ms", value: p50, p50, p99: quantile(samples, 0.99), note };
}
