// Writes the runtime bundle the Kubernetes image runs (k8s/image/build.sh): the same CommonJS, ASCII
// file a process host's runtime starts from (platform/hosts/runtime-bundle.ts), at the path given.
// Usage: node --import tsx k8s/image/runtime-bundle.ts <out.cjs>
import { writeFileSync } from "node:fs";
import { runtimeBundle } from "../../platform/hosts/runtime-bundle.ts";

const out = process.argv[2];
if (!out) throw new Error("usage: k8s/image/runtime-bundle.ts <out.cjs>");
writeFileSync(out, runtimeBundle());
