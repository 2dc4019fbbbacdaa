import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePortOnLoopback } from "../../k8s/local-cluster/lib/free-port.ts";
import { launch, startNats, startRedis } from "../../platform/local-servers.ts";

// Boundary: the kernel's loopback port allocation and real nats-server / redis-server processes.
describe("free ports for private servers (real kernel sockets and servers)", () => {
  it("never hands the same port out twice in one process, even asked 200 times at once", async () => {
    const ports = await Promise.all(Array.from({ length: 200 }, () => freePortOnLoopback()));
    expect(new Set(ports).size).toBe(200);
  });

  it("a server counts as started only when its own process listens: a port another process holds fails the start", async () => {
    const squatter = createServer();
    const port = await new Promise<number>((ok) =>
      squatter.listen(0, "127.0.0.1", () => ok((squatter.address() as { port: number }).port)),
    );
    try {
      // nats-server cannot bind the squatted port and exits; before, the squatter's socket answered the
      // harness's connect probe and the start was reported good with no nats-server behind it.
      await expect(startNats({ port })).rejects.toThrow(/nats-server exited during start-up|did not listen/);
    } finally {
      squatter.close();
    }
    const [nats, redis] = await Promise.all([startNats(), startRedis()]);
    try {
      expect(nats.port).not.toBe(redis.port);
    } finally {
      await Promise.all([nats.stop(), redis.stop()]);
    }
  });

  it("a server whose start fails leaves no directory behind (a real process that exits at once)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "drover-launch-test-"));
    const port = await freePortOnLoopback();
    await expect(launch("false", "false", [], port, `x://127.0.0.1:${port}`, dir)).rejects.toThrow(
      /false exited during start-up/,
    );
    expect(existsSync(dir)).toBe(false);
  });
});
