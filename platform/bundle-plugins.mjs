// esbuild plugins shared by the services' bundles (platform/service-bundle.ts) and the CLI's start-up
// cache (cli/bundle.mjs). Plain JS: the CLI's fast path loads no TypeScript.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, extname } from "node:path";
import { pathToFileURL } from "node:url";

const LOADERS = { ".ts": "ts", ".mts": "ts", ".js": "js", ".mjs": "js", ".json": "json" };

/**
 * The repository's own files keep their `import.meta.dirname`/`url`/`filename` once bundled: each is
 * replaced by the literal of the source file it is written in (a bundle lives in .run/build, so
 * `resolve(import.meta.dirname, "../..")` would otherwise point somewhere else). When `inputs` is
 * given, the sha256 of every file read is recorded in it (the CLI cache's freshness manifest).
 */
export function sourceLocation(inputs) {
  return {
    name: "source-location",
    setup(b) {
      b.onLoad({ filter: /\.(m?ts|m?js|json)$/ }, (args) => {
        if (args.path.includes("/node_modules/")) return undefined;
        const bytes = readFileSync(args.path);
        if (inputs) inputs[args.path] = createHash("sha256").update(bytes).digest("hex");
        // Not inside quotes: a file that writes about import.meta in a string keeps its strings.
        const text = bytes
          .toString("utf8")
          .replace(/(?<!["'`])\bimport\.meta\.(dirname|filename|url)\b(?!["'`])/g, (_, what) =>
            JSON.stringify(
              what === "dirname" ? dirname(args.path) : what === "filename" ? args.path : pathToFileURL(args.path).href,
            ),
          );
        return { contents: text, loader: LOADERS[extname(args.path)] };
      });
    },
  };
}
