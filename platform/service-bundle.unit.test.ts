import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { serviceCommand } from "./service-bundle.ts";

const ROOT = resolve(import.meta.dirname, "..");

// Pure bundling (esbuild on the repository's files): proves no transport; the e2e, proof and k8s
// tiers start every service from these bundles and prove they run.
describe("service bundles (esbuild, no transport)", () => {
  it("DROVER_SERVICES_FROM_SOURCE=1 starts the service from source through tsx", async () => {
    process.env.DROVER_SERVICES_FROM_SOURCE = "1";
    try {
      expect(await serviceCommand("scheduler")).toEqual([
        "--import",
        "tsx",
        resolve(ROOT, "services/scheduler/main.ts"),
      ]);
    } finally {
      delete process.env.DROVER_SERVICES_FROM_SOURCE;
    }
  });

  it("bundles a service into one file under .run/build, named by content, each file keeping its own import.meta location", async () => {
    const argv = await serviceCommand("api");
    expect(argv).toHaveLength(1);
    expect(argv[0]).toMatch(new RegExp(`^${ROOT}/\\.run/build/service-api-[0-9a-f]{16}\\.mjs$`));
    expect(await serviceCommand("api")).toBe(argv); // built once per process
    const text = readFileSync(argv[0]!, "utf8");
    expect(text).not.toContain("import.meta");
    // services/api/http/dashboard-route.ts: new URL("./dashboard/", import.meta.url)
    expect(text).toContain(JSON.stringify(pathToFileURL(resolve(ROOT, "services/api/http/dashboard-route.ts")).href));
    // services/api/shell/startup.ts: resolve(import.meta.dirname, "../../..")
    expect(text).toContain(JSON.stringify(resolve(ROOT, "services/api/shell")));
  });
});
