import { createServer } from "node:net";

/** Asks the kernel for a currently unused TCP port on 127.0.0.1 (racy by nature; used at start-up only). */
export function freePortOnLoopback(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      s.close(() => (typeof addr === "object" && addr ? ok(addr.port) : fail(new Error("no port"))));
    });
  });
}
