import { spawn } from "node:child_process";
import { request } from "node:http";
import { connect } from "node:net";
import type { V1Container, V1Probe } from "@kubernetes/client-node";

/** Resolves a probe's port (number or container port name) against the container's ports. */
function portOf(container: V1Container, port: number | string | undefined): number | undefined {
  if (typeof port === "number") return port;
  if (port !== undefined && /^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/**
 * Runs one readiness check against the Pod's own address: httpGet (2xx/3xx is success), tcpSocket
 * (a connection is accepted) or exec (exit 0, run with the container's environment). Resolves
 * false on failure or after `timeoutSeconds` (default 1); never rejects.
 */
export function probeOnce(
  probe: V1Probe,
  container: V1Container,
  podIP: string,
  env: Record<string, string>,
  cwd: string,
): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  return new Promise<boolean>((ok) => {
    const timer = setTimeout(() => ok(false), timeoutMs);
    const done = (v: boolean): void => {
      clearTimeout(timer);
      ok(v);
    };
    if (probe.httpGet) {
      const port = portOf(container, probe.httpGet.port as number | string);
      if (port === undefined) return done(false);
      const headers = Object.fromEntries((probe.httpGet.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const req = request(
        { host: probe.httpGet.host ?? podIP, port, path: probe.httpGet.path ?? "/", headers, timeout: timeoutMs },
        (res) => {
          res.resume();
          done((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
        },
      );
      req.once("error", () => done(false));
      req.end();
    } else if (probe.tcpSocket) {
      const port = portOf(container, probe.tcpSocket.port as number | string);
      if (port === undefined) return done(false);
      const s = connect({ host: probe.tcpSocket.host ?? podIP, port });
      s.once("connect", () => {
        s.destroy();
        done(true);
      });
      s.once("error", () => done(false));
    } else if (probe.exec?.command?.length) {
      const [cmd, ...args] = probe.exec.command as [string, ...string[]];
      const child = spawn(cmd, args, { env, cwd, stdio: "ignore" });
      child.once("error", () => done(false));
      child.once("exit", (code) => done(code === 0));
    } else {
      done(false);
    }
  });
}

/**
 * Runs a readiness probe on its schedule (initialDelaySeconds, then every periodSeconds, default
 * 10) and calls `onChange(ready)` whenever the verdict flips, honouring successThreshold (default 1)
 * and failureThreshold (default 3). Returns a function that stops the loop.
 */
export function runReadinessProbe(
  probe: V1Probe,
  container: V1Container,
  podIP: string,
  env: Record<string, string>,
  cwd: string,
  onChange: (ready: boolean) => void,
): () => void {
  let stopped = false;
  let ready = false;
  let successes = 0;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
    const ok = await probeOnce(probe, container, podIP, env, cwd);
    if (stopped) return;
    if (ok) {
      successes++;
      failures = 0;
    } else {
      failures++;
      successes = 0;
    }
    if (!ready && successes >= (probe.successThreshold ?? 1)) {
      ready = true;
      onChange(true);
    }
    if (ready && failures >= (probe.failureThreshold ?? 3)) {
      ready = false;
      onChange(false);
    }
    timer = setTimeout(() => void tick(), (probe.periodSeconds ?? 10) * 1000);
  };
  timer = setTimeout(() => void tick(), (probe.initialDelaySeconds ?? 0) * 1000);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
