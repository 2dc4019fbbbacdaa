import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// Boundary: real service processes (`node --import tsx services/<name>/main.ts`) and their start-up
// checks; each must stop before it connects anywhere, so no server is needed (NATS_URL points at a
// closed port and is never reached when the check refuses).
const ROOT = resolve(import.meta.dirname, "../..");
const CONFIG = resolve(ROOT, "config/drover.local.json");

async function start(service: string, extra: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", `services/${service}/main.ts`], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      DROVER_CONFIG: CONFIG,
      NATS_URL: "nats://127.0.0.1:1",
      REDIS_URL: "redis://127.0.0.1:1",
      ...extra,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((ok) => child.once("exit", ok));
  clearTimeout(timer);
  return { code, stderr };
}

describe("a control-plane service refuses to start without a real command secret (no DROVER_DEV)", () => {
  it.each(["capacity", "forensics", "provisioner", "recovery", "admission"])(
    "%s without DROVER_COMMAND_SECRET exits 1 with one line naming the variable and the fix",
    async (service) => {
      const { code, stderr } = await start(service, {});
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(`^${service}: cannot start: DROVER_COMMAND_SECRET is not set: .*openssl rand -hex 32.*DROVER_DEV=1`),
      );
    },
  );

  it("the shipped placeholder secret is refused the same way, and so is a short one", async () => {
    const placeholder = await start("provisioner", { DROVER_COMMAND_SECRET: "change-me-to-32-random-bytes-of-hex" });
    expect(placeholder.code).toBe(1);
    expect(placeholder.stderr).toContain("DROVER_COMMAND_SECRET is a placeholder");
    const short = await start("capacity", { DROVER_COMMAND_SECRET: "0123456789abcdef" });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("DROVER_COMMAND_SECRET is shorter than 32 characters");
  });

  it("with DROVER_DEV=1 the same service gets past the secret check (and fails only on the unreachable NATS)", async () => {
    const { code, stderr } = await start("capacity", { DROVER_DEV: "1" });
    expect(code).toBe(1);
    expect(stderr).not.toContain("DROVER_COMMAND_SECRET");
    expect(stderr).toContain("capacity: cannot start:");
  });

  it("the api refuses plaintext tenant tokens without DROVER_DEV=1, naming the stored form and never a token", async () => {
    const { code, stderr } = await start("api", {});
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^api: cannot start: DROVER_CONFIG tokens: 6 token\(s\) stored in plaintext; store each as sha256:/,
    );
    expect(stderr).not.toContain("dev-token-");
  });
});
