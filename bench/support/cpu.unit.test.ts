import { describe, expect, it } from "vitest";
import { nameOf } from "./cpu.ts";

describe("the CPU breakdown's process names (bench/support/cpu.ts)", () => {
  it("names a process host's runtime started through the code-cache loader `runtime`, not node-other", () => {
    const cmd =
      "/usr/bin/node --cpu-prof /repo/platform/hosts/runtime-loader.cjs /repo/.run/build/runtime-0123456789abcdef.cjs";
    expect(nameOf(cmd)).toBe("runtime");
  });

  it("names services from their bundles and from source, and servers by their executable", () => {
    expect(nameOf("/usr/bin/node /repo/.run/build/service-admission-0123456789abcdef.mjs")).toBe("admission");
    expect(nameOf("/usr/bin/node --import tsx /repo/services/runtime/main.ts")).toBe("runtime");
    expect(nameOf("/repo/.tools/bin/nats-server -c /tmp/x.conf")).toBe("nats-server");
    expect(nameOf("/usr/bin/node /repo/other.mjs")).toBe("node-other");
  });
});
