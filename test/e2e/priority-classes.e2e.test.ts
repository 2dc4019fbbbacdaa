import { readdir, readFile } from "node:fs/promises";
import { afterEach, describe, expect, inject, it } from "vitest";
import { cpuSnapshot } from "../../bench/support/cpu.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { threadNices } from "../support/process-nice.ts";

/**
 * CPU priority classes (platform/priority.ts) on the processes the harness really spawns, read from
 * /proc: every thread of the forensics projector and of FerretDB at nice 10, the control path at 0;
 * DROVER_PRIORITY=off leaves all at 0. (`make run`'s side: test/e2e/make-run.e2e.test.ts.)
 */
const pidsOf = async (name: string) =>
  [...(await cpuSnapshot())].filter(([, p]) => p.name === name).map(([pid]) => pid);

/** The FerretDB the global setup started: the process listening where mongoUrl points. */
async function ferretPid(): Promise<number> {
  const port = new URL(inject("mongoUrl")).port;
  for (const d of (await readdir("/proc")).filter((p) => /^\d+$/.test(p))) {
    const cmd = await readFile(`/proc/${d}/cmdline`, "utf8").catch(() => "");
    if (cmd.includes("ferretdb") && cmd.includes(`--listen-addr=127.0.0.1:${port}`)) return Number(d);
  }
  throw new Error(`no ferretdb listening on ${port}`);
}

const config = { controlPlaneId: "cp-priority", tenants: [], tokens: {} };

describe("CPU priority classes: the read models run below the control path in the processes the harness spawns", () => {
  let cp: ControlPlane | undefined;
  afterEach(async () => {
    await cp?.stop();
    cp = undefined;
    delete process.env.DROVER_PRIORITY;
  });

  it("every thread of forensics and of FerretDB runs at nice 10, every thread of admission at nice 0", async () => {
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/9`,
      mongoUrl: inject("mongoUrl"),
      services: ["admission", "forensics"],
      config,
    });
    const [forensics] = await pidsOf("forensics");
    const [admission] = await pidsOf("admission");
    expect(await threadNices(forensics!)).toEqual(new Set([10]));
    expect(await threadNices(await ferretPid())).toEqual(new Set([10]));
    expect(await threadNices(admission!)).toEqual(new Set([0]));
  }, 180_000);

  it("DROVER_PRIORITY=off: forensics runs at nice 0 like every other service", async () => {
    process.env.DROVER_PRIORITY = "off";
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/9`,
      mongoUrl: inject("mongoUrl"),
      services: ["forensics"],
      config,
    });
    const [forensics] = await pidsOf("forensics");
    expect(await threadNices(forensics!)).toEqual(new Set([0]));
  }, 180_000);
});
