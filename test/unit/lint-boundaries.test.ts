import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

/**
 * The two boundary rules of conventions.md are enforced by eslint.config.js. This lints small
 * sources under the repository's real config (eslint's Node API, no transport) so a rule that stops
 * matching (a glob that no longer fits, a service missing from the list) fails here, not silently.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const eslint = new ESLint({ cwd: ROOT });

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: resolve(ROOT, file) });
  return (r?.messages ?? [])
    .filter((m) => m.ruleId === "no-restricted-imports" || m.ruleId === "no-restricted-syntax")
    .map((m) => m.message);
}

// Every directory under services/ (not a list copied from eslint.config.js): a new service that the
// config does not know about fails here.
const SERVICES = readdirSync(resolve(ROOT, "services"), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

describe("lint boundary: no service imports another service", () => {
  it("finds the services", () => {
    expect(SERVICES.length).toBeGreaterThanOrEqual(7);
  });

  it.each(SERVICES)("refuses %s importing another service from its root and from a nested folder", async (svc) => {
    const other = SERVICES.find((s) => s !== svc)!;
    const fromRoot = await boundaryErrors(
      `services/${svc}/main.ts`,
      `import { x } from "../${other}/index.ts";\nexport const y = x;\n`,
    );
    const fromShell = await boundaryErrors(
      `services/${svc}/shell/probe.ts`,
      `import { x } from "../../${other}/index.ts";\nexport const y = x;\n`,
    );
    for (const errs of [fromRoot, fromShell])
      expect(errs).toEqual([expect.stringContaining("a service never imports another service")]);
  });

  it("allows a service to import contracts/, streams/ and its own modules", async () => {
    const code =
      `import { a } from "../../../contracts/index.ts";\nimport { b } from "../../../streams/index.ts";\n` +
      `import { c } from "../domain/decide.ts";\nexport const y = [a, b, c];\n`;
    expect(await boundaryErrors("services/api/shell/probe.ts", code)).toEqual([]);
  });
});

describe("lint boundary: domain code is pure", () => {
  const DOMAIN_FILES = ["services/recovery/domain/probe.ts", "contracts/probe.ts", "aggregates/run/probe.ts"];

  it.each(DOMAIN_FILES)("refuses IO modules and IO layers in %s", async (file) => {
    for (const mod of [
      "node:fs",
      "@nats-io/jetstream",
      "ioredis",
      "mongodb",
      "@kubernetes/client-node",
      "fastify",
      "../../streams/event-store.ts",
    ]) {
      const errs = await boundaryErrors(file, `import { x } from "${mod}";\nexport const y = x;\n`);
      expect(errs, `${file} importing ${mod}`).toHaveLength(1);
    }
  });

  it.each(DOMAIN_FILES)("refuses the clock, randomness, generated ids and the process in %s", async (file) => {
    for (const expr of ["Date.now()", "new Date()", "Math.random()", "crypto.randomUUID()", "process.env.X"]) {
      const errs = await boundaryErrors(file, `export const y = () => ${expr};\n`);
      expect(errs, `${file}: ${expr}`).toHaveLength(1);
    }
  });

  it("lets domain code take a time it is given and lets shell code do IO", async () => {
    expect(
      await boundaryErrors("services/recovery/domain/probe.ts", "export const y = (now: number) => new Date(now);\n"),
    ).toEqual([]);
    expect(
      await boundaryErrors(
        "services/recovery/shell/probe.ts",
        `import { readFileSync } from "node:fs";\nexport const y = () => [readFileSync, Date.now()];\n`,
      ),
    ).toEqual([]);
  });
});

describe("lint boundary: product code does not import test support", () => {
  const PRODUCT_FILES = [
    "cli/commands/probe.ts",
    "platform/probe.ts",
    "streams/probe.ts",
    "contracts/probe.ts",
    "aggregates/probe.ts",
    "services/api/shell/probe.ts",
    "services/recovery/domain/probe.ts",
  ];

  it.each(PRODUCT_FILES)("refuses test/support in %s", async (file) => {
    const up = "../".repeat(file.split("/").length - 1);
    const errs = await boundaryErrors(file, `import { x } from "${up}test/support/streams.ts";\nexport const y = x;\n`);
    expect(errs).toEqual([expect.stringContaining("product code does not import test support")]);
  });

  it("lets a unit test beside product code import test support", async () => {
    const code = `import { x } from "../../../test/support/example-events.ts";\nexport const y = x;\n`;
    expect(await boundaryErrors("services/api/domain/probe.unit.test.ts", code)).toEqual([]);
  });

  it("keeps the service boundary in domain code, whose purity rule shares the same lint rule", async () => {
    const code = `import { x } from "../../admission/index.ts";\nexport const y = x;\n`;
    expect(await boundaryErrors("services/recovery/domain/probe.ts", code)).toEqual([
      expect.stringContaining("a service never imports another service"),
    ]);
  });
});
