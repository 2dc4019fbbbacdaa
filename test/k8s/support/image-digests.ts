import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { inject } from "vitest";
import { containerdPaths, importImage, type ContainerdPaths } from "../../../k8s/local-cluster/node/containerd.ts";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../../..");

/** The k8s tier's node's containerd (one node per run). */
export function nodeContainerd(): ContainerdPaths {
  const runDir = inject("k8sRunDir");
  const node = readdirSync(runDir).find((n) => n.startsWith("node-"));
  if (!node) throw new Error(`no node directory in ${runDir}`);
  return containerdPaths(join(runDir, node));
}

const ctr = (p: ContainerdPaths, ...args: string[]) =>
  run("ctr", ["--address", p.socket, "--namespace", "k8s.io", ...args], { maxBuffer: 16 << 20 });

const normalized = (ref: string) => (ref.split("/")[0]!.includes(".") ? ref : `docker.io/${ref}`);

/**
 * The manifest digest (hex) of an image the node holds, and a name for it by that digest
 * (`docker.io/<repo>@sha256:<hex>`) that the node resolves without a registry: what a cluster
 * pulling from a registry would run for a digest reference.
 */
export async function digestReference(p: ContainerdPaths, ref: string): Promise<{ digest: string; ref: string }> {
  const name = normalized(ref);
  const { stdout } = await ctr(p, "images", "ls");
  const row = stdout.split("\n").find((l) => l.split(/\s+/)[0] === name);
  const digest = row ? /sha256:([0-9a-f]{64})/.exec(row)?.[1] : undefined;
  if (!digest) throw new Error(`the node holds no image ${name}:\n${stdout}`);
  const byDigest = `${name.replace(/:[^/:]+$/, "")}@sha256:${digest}`;
  await ctr(p, "images", "tag", "--force", name, byDigest);
  return { digest, ref: byDigest };
}

/**
 * A second runtime image: the tier's runtime image with one more config label (so another
 * manifest, another digest; the same layers), built with umoci and skopeo from the OCI layout
 * `make image` left in .run/images, imported into the node. Returns its tag reference.
 */
export async function variantImage(p: ContainerdPaths, label: string): Promise<string> {
  const src = join(ROOT, ".run/images/oci-runtime");
  const work = mkdtempSync(join(tmpdir(), "drover-variant-"));
  try {
    const layout = join(work, "oci");
    // Blobs hard-linked (never written in place); index.json and oci-layout copied: umoci rewrites them.
    await run("cp", ["-al", src, layout]);
    for (const f of ["index.json", "oci-layout"]) {
      rmSync(join(layout, f));
      copyFileSync(join(src, f), join(layout, f));
    }
    await run("umoci", [
      "config",
      "--image",
      `${layout}:runtime`,
      "--tag",
      "variant",
      `--config.label=drover.test=${label}`,
    ]);
    const tag = `drover/runtime:variant-${randomBytes(4).toString("hex")}`;
    const archive = join(work, "variant.tar");
    await run("skopeo", ["copy", "--quiet", `oci:${layout}:variant`, `docker-archive:${archive}:${tag}`]);
    await importImage(p, archive);
    return tag;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
