import { createServer } from "node:net";

// Ports this process handed out recently: the kernel may give a just-closed port to the very next
// listen(0), so two servers started at once (nats-server and redis-server of one test run) could be
// told the same port, and one of them then fails to bind.
const handedOut = new Map<number, number>();
const REMEMBER_MS = 120_000;

function kernelPort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      s.close(() => (typeof addr === "object" && addr ? ok(addr.port) : fail(new Error("no port"))));
    });
  });
}

/**
 * Asks the kernel for a currently unused TCP port on 127.0.0.1, never one this process handed out
 * in the last two minutes (racy against other processes by nature; callers check that their server
 * is the one listening).
 */
export async function freePortOnLoopback(): Promise<number> {
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > REMEMBER_MS) handedOut.delete(port);
  for (;;) {
    const port = await kernelPort();
    if (handedOut.has(port)) continue;
    handedOut.set(port, now);
    return port;
  }
}
