import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { build } from "esbuild";
import { sourceLocation } from "./bundle-plugins.mjs";
import { writeOnce } from "./hosts/runtime-bundle.ts";

const ROOT = resolve(import.meta.dirname, "..");

/**
 * The argv that starts a control-plane service process (`services/<name>/main.ts`). Like the
 * runtime's (runtime-bundle.ts), the service is bundled into one ESM file under .run/build (esbuild,
 * packages external, named by content so side-by-side callers share it): a process then loads one
 * file instead of compiling its import graph through tsx (and a tsx compiler process) on every
 * start (the e2e, proof and k8s tiers start a whole control plane per file and restart services
 * often. The bundle is a cache, never required: if it cannot be built, or DROVER_SERVICES_FROM_SOURCE=1,
 * the service starts from source through tsx, exactly as before.
 */
export function serviceCommand(name: string, onFallback?: (why: string) => void): Promise<readonly string[]> {
  const known = built.get(name);
  if (known) return known;
  const argv = bundle(name, onFallback);
  built.set(name, argv);
  return argv;
}
/** One bundle per service and process: restarts within a test reuse it. */
const built = new Map<string, Promise<readonly string[]>>();

async function bundle(name: string, onFallback?: (why: string) => void): Promise<readonly string[]> {
  const entry = resolve(ROOT, "services", name, "main.ts");
  const fromSource = ["--import", "tsx", entry];
  if (process.env.DROVER_SERVICES_FROM_SOURCE === "1") return fromSource;
  try {
    const dir = resolve(ROOT, ".run/build");
    mkdirSync(dir, { recursive: true });
    const { outputFiles } = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      plugins: [sourceLocation()],
      logLevel: "silent",
      write: false,
      outfile: resolve(dir, `${name}.mjs`),
    });
    const out = outputFiles[0]!;
    const digest = createHash("sha256").update(out.contents).digest("hex").slice(0, 16);
    const outfile = resolve(dir, `service-${name}-${digest}.mjs`);
    writeOnce(outfile, out.contents);
    return [outfile];
  } catch (e) {
    onFallback?.(String((e as Error).message ?? e).slice(0, 300));
    return fromSource;
  }
}
