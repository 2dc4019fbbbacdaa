// A stand-in runtime for host-strategy tests: it proves process lifecycle (spawn, announce, exit,
// kill), not the runtime's command transport. FAKE_RUNTIME_MODE picks the behaviour:
//   listen        bind DROVER_PORT on DROVER_BIND_HOST and announce like services/runtime/main.ts
//   exit          exit with code 3 before announcing (a runtime that dies during start-up)
//   ignore-term   like listen, but SIGTERM is ignored (only SIGKILL stops it)
//   wrong-port    announce a port other than the one it bound
//   silent        never announce
//   pool          a warm pool member: bind DROVER_POOL_BIND_PORT and announce `pool-listening` once
//                 FAKE_BOOT_MS of its own timers passed (a boot that a SIGSTOP holds)
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const mode = process.env.FAKE_RUNTIME_MODE ?? "listen";
const stat = readFileSync("/proc/self/stat", "utf8");
const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
const hostIncarnation = `pid:${process.pid}:${start}`;

if (mode === "exit") {
  console.error("fake runtime: exiting during start-up as asked");
  process.exit(3);
}
if (mode === "ignore-term") process.on("SIGTERM", () => console.log(JSON.stringify({ event: "sigterm-ignored" })));
if (mode === "pool") {
  const server = createServer((_req, res) => res.end("fake member"));
  server.listen(Number(process.env.DROVER_POOL_BIND_PORT), process.env.DROVER_BIND_HOST ?? "127.0.0.1", () => {
    setTimeout(
      () => console.log(JSON.stringify({ event: "pool-listening", port: server.address().port, hostIncarnation })),
      Number(process.env.FAKE_BOOT_MS ?? 0),
    );
  });
} else if (mode !== "silent") {
  const server = createServer((_req, res) => res.end("fake"));
  server.listen(Number(process.env.DROVER_PORT), process.env.DROVER_BIND_HOST ?? "127.0.0.1", () => {
    const port = mode === "wrong-port" ? server.address().port + 1 : server.address().port;
    console.log(
      JSON.stringify({
        event: "listening",
        port,
        hostIncarnation,
        runtimeInstanceId: process.env.DROVER_RUNTIME_INSTANCE_ID,
      }),
    );
  });
} else {
  setInterval(() => {}, 1000);
}
