/**
 * Reads V8 CPU profiles (`--cpu-prof`, written where DROVER_CPU_PROF_DIR says: platform/node-flags.ts)
 * cut to a window of V8's monotonic clock (µs), as the workload benches print theirs ("w2 monotonic
 * window"): which process a profile is, how much of the window it was busy, and where that went, by
 * function (self) and by owner (the npm package the sample is in, else our nearest bundled function).
 * Pure: a parsed profile in, figures out. The CLI is bench/cpu-profile-summary.ts.
 *
 * Caveat (docs/decisions.md, session 30): a sample is charged to whatever was on the stack when V8
 * took it, so on a loaded machine a preempted process shows "busy" time it did not spend on a core;
 * compare shares within one profile, and take CPU time itself from /proc (bench/support/cpu.ts).
 * The runtime's CommonJS bundle inlines its packages (platform/hosts/runtime-bundle.ts), so in a
 * runtime's profile nats.js or Fastify frames are owned by `ours:<their function>`; the services'
 * bundles keep packages external, and there the owner is the package.
 */
export interface CpuProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly CpuProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface WindowSummary {
  /** Samples in the window that were not `(idle)`, and those that were. */
  readonly busy: number;
  readonly idle: number;
  /** Busy samples by the function on top of the stack (`name file:line`), most first. */
  readonly self: readonly (readonly [string, number])[];
  /** Busy samples by owner: `lib:<package>` for a sample inside node_modules, else `ours:<function>:<line>`, else `node`. */
  readonly owners: readonly (readonly [string, number])[];
}

/** What process wrote `profile`: a service's bundle name, `runtime`, or undefined. */
export function processOfProfile(profile: CpuProfile): string | undefined {
  for (const n of profile.nodes) {
    const url = n.callFrame.url;
    const service =
      /\/service-([\w-]+)-[0-9a-f]{16}\.mjs$/.exec(url)?.[1] ?? /services\/([\w-]+)\/main\.ts$/.exec(url)?.[1];
    if (service) return service;
    if (/\/runtime-[0-9a-f]+\.cjs$/.test(url)) return "runtime";
  }
  return undefined;
}

/** Our code: a service's or the runtime's bundle, or a source file of ours (not node's own `node:` modules). */
const isOurs = (url: string): boolean =>
  /\/service-[\w-]+-[0-9a-f]{16}\.mjs$|\/runtime-[0-9a-f]+\.cjs$/.test(url) ||
  (!url.startsWith("node:") && /\/(services|platform|streams|contracts|aggregates)\/[^/]+/.test(url));

const frameKey = (n: CpuProfileNode): string =>
  `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").pop() ?? ""}:${n.callFrame.lineNumber + 1}`;

/** The package of a node_modules URL (`@scope/name` or `name`). */
function packageOf(url: string): string | undefined {
  const at = url.lastIndexOf("node_modules/");
  if (at < 0) return undefined;
  const parts = url.slice(at + "node_modules/".length).split("/");
  return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * The samples of `profile` taken in [startUs, endUs] (V8's monotonic clock, the profile's own
 * `startTime` base), counted: not weighted by the gap to the next sample, which on a loaded machine
 * is mostly the time the process waited for a core, charged to whatever it was running.
 */
export function summarizeWindow(profile: CpuProfile, startUs: number, endUs: number, top = 20): WindowSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownerCache = new Map<number, string>();
  const ownerOf = (id: number): string => {
    const known = ownerCache.get(id);
    if (known !== undefined) return known;
    let owner = "node";
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x)!.callFrame;
      const pkg = packageOf(f.url);
      if (pkg) {
        owner = `lib:${pkg}`;
        break;
      }
      if (isOurs(f.url)) {
        owner = `ours:${f.functionName || "(anonymous)"}:${f.lineNumber + 1}`;
        break;
      }
    }
    ownerCache.set(id, owner);
    return owner;
  };
  const self = new Map<string, number>();
  const owners = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < startUs || t > endUs) continue;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === "(idle)") {
      idle++;
      continue;
    }
    busy++;
    const k = frameKey(node);
    self.set(k, (self.get(k) ?? 0) + 1);
    const o = ownerOf(node.id);
    owners.set(o, (owners.get(o) ?? 0) + 1);
  }
  const ranked = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, top);
  return { busy, idle, self: ranked(self), owners: ranked(owners) };
}
