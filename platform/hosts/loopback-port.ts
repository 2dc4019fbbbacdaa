import { createServer } from "node:net";

/**
 * A free TCP port on `host`, chosen by the kernel (bind to port 0, read it, close). The port is
 * free when returned, not reserved: the runtime binds it moments later and reports the port it
 * bound, which the endpoint layer compares with this one.
 * Failure modes: rejects with the bind error (e.g. EADDRNOTAVAIL for a host that is not local).
 */
export function allocateLoopbackPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const addr = server.address();
      server.close(() =>
        typeof addr === "object" && addr !== null ? resolve(addr.port) : reject(new Error("no port bound")),
      );
    });
  });
}
