import { spawn } from "node:child_process";
import { createConnection, createServer, type Server } from "node:net";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { listensOn } from "../../platform/hosts/listening-socket.ts";

// Boundary: the kernel's /proc TCP tables and descriptor links, with real listening sockets of this
// process and of a child process (the endpoint layer's proof for a process host).
async function listening(host: string): Promise<{ server: Server; port: number }> {
  const server = createServer();
  server.listen({ host, port: 0, ipv6Only: host.includes(":") });
  await once(server, "listening");
  return { server, port: (server.address() as { port: number }).port };
}

const closed = (server: Server) => new Promise<void>((ok) => server.close(() => ok()));

describe("listensOn: only the process holding the listening socket proves a port (real /proc)", () => {
  it("finds this process's IPv4 and IPv6-only listeners; a closed port and a gone pid are false", async () => {
    const v4 = await listening("127.0.0.1");
    const v6 = await listening("::1");
    try {
      expect(listensOn(process.pid, v4.port)).toBe(true);
      expect(listensOn(process.pid, v6.port)).toBe(true);
      expect(listensOn(2 ** 22 + 7, v4.port)).toBe(false);
    } finally {
      await Promise.all([closed(v4.server), closed(v6.server)]);
    }
    expect(listensOn(process.pid, v4.port)).toBe(false);
    expect(listensOn(process.pid, v6.port)).toBe(false);
  });

  it("a listener listed after many others (several kernel reads in) is found; its port closed, it is not", async () => {
    // 120 listeners: the table's listening part spans many of listensOn's reads (one line ~150 bytes).
    const many = await Promise.all(Array.from({ length: 120 }, () => listening("127.0.0.1")));
    try {
      for (const l of many) expect(listensOn(process.pid, l.port)).toBe(true);
    } finally {
      await Promise.all(many.map((l) => closed(l.server)));
    }
    for (const l of many.slice(0, 5)) expect(listensOn(process.pid, l.port)).toBe(false);
  });

  it("a port another process listens on proves that process, not this one (which holds a connection to it)", async () => {
    const child = spawn(
      process.execPath,
      ["-e", "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))"],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      const [chunk] = (await once(child.stdout!, "data")) as [Buffer];
      const port = Number(chunk.toString().trim());
      const conn = createConnection({ host: "127.0.0.1", port });
      await once(conn, "connect");
      try {
        expect(listensOn(child.pid!, port)).toBe(true);
        expect(listensOn(process.pid, port)).toBe(false);
      } finally {
        conn.destroy();
      }
    } finally {
      child.kill("SIGKILL");
    }
  });
});
