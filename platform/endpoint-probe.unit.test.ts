import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { endpointAddress, probeEndpoint } from "./endpoint-probe.ts";

describe("command endpoint probe (boundary: one real loopback TCP connect)", () => {
  it("parses the endpoints `endpoint-published` writes; anything else is not probed", () => {
    expect(endpointAddress("http://10.200.4.6:8080")).toEqual({ host: "10.200.4.6", port: 8080 });
    expect(endpointAddress("127.0.0.1:50051")).toEqual({ host: "127.0.0.1", port: 50051 });
    expect(endpointAddress("http://[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    expect(endpointAddress("http://runtime.example")).toEqual({ host: "runtime.example", port: 80 });
    for (const e of ["nats:rt-a", "https://10.0.0.1:443", "", "not an endpoint", "10.0.0.1"])
      expect([e, endpointAddress(e)]).toEqual([e, undefined]);
  });

  it("says accepted while something listens, refused once it stops, inconclusive for what it cannot parse", async () => {
    const server = createServer((s) => s.destroy());
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    expect(await probeEndpoint(endpoint, 1_000)).toBe("accepted");
    await new Promise<void>((ok) => server.close(() => ok()));
    expect(await probeEndpoint(endpoint, 1_000)).toBe("refused");
    expect(await probeEndpoint("nats:rt-a", 1_000)).toBe("inconclusive");
  });
});
