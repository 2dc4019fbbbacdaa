#!/usr/bin/env node
// The installed `drover` command (package.json "bin"). Fast path: a cached esbuild bundle of
// cli/drover.ts under .run/build, rebuilt whenever a source file changed (cli/bundle.mjs); loading one
// file skips transpiling the CLI's import graph through tsx on every start. Without a bundle (it cannot
// be built or written, or DROVER_CLI_FROM_SOURCE=1) the CLI loads from source through tsx, as before.
// DROVER_CLI_DEBUG=1 prints one stderr line saying which way it went; DROVER_CLI_CACHE_DIR puts the
// cache elsewhere (tests; bare imports resolve from there, so it needs node_modules above it).
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const debug = process.env.DROVER_CLI_DEBUG === "1" ? (line) => process.stderr.write(`drover-cli: ${line}\n`) : () => {};

async function load() {
  if (process.env.DROVER_CLI_FROM_SOURCE !== "1") {
    const { cliBundle } = await import("./bundle.mjs");
    const dir = process.env.DROVER_CLI_CACHE_DIR || resolve(here, "../.run/build");
    const bundle = await cliBundle(resolve(here, "drover.ts"), dir, debug);
    if (bundle) {
      try {
        return await import(pathToFileURL(bundle).href);
      } catch (e) {
        debug(`bundle did not load (${String(e?.message ?? e).split("\n")[0]}); from source`);
      }
    }
  } else debug("DROVER_CLI_FROM_SOURCE=1; from source");
  const { register } = await import("tsx/esm/api");
  register();
  return import("./drover.ts");
}

const { cli } = await load();
await cli();
