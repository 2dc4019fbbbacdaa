import { join } from "node:path";
import { componentNice, startDaemon, stopDaemon, waitUntilReady, type DaemonRecord } from "../lib/daemon.ts";
import { getOk } from "../control-plane/probes.ts";
import { freePortOnLoopback } from "../lib/free-port.ts";
import { writeTokenKubeconfig } from "./certs.ts";

/** What the scheduler and the controller manager need from the control plane. */
export interface ComponentInputs {
  readonly binDir: string;
  readonly runDir: string;
  readonly server: string;
  readonly caFile: string;
  readonly caKey: string;
  readonly saPrivateKey: string;
  readonly schedulerToken: string;
  readonly controllerManagerToken: string;
}

/**
 * Starts kube-scheduler (as user system:kube-scheduler) and kube-controller-manager (as
 * system:kube-controller-manager, each controller with its own service account's credentials, as
 * kubeadm does), both serving healthz on a free loopback port, no leader election. The node
 * lifecycle controller lifts the kubelet's not-ready taint; the garbage collector follows owner
 * references. Resolves once both answer /healthz.
 */
export async function startComponents(c: ComponentInputs): Promise<void> {
  const schedKc = join(c.runDir, "scheduler.kubeconfig");
  const cmKc = join(c.runDir, "controller-manager.kubeconfig");
  await writeTokenKubeconfig(schedKc, c.server, c.caFile, c.schedulerToken);
  await writeTokenKubeconfig(cmKc, c.server, c.caFile, c.controllerManagerToken);
  const [schedPort, cmPort] = [await freePortOnLoopback(), await freePortOnLoopback()];
  const common = (kc: string, port: number): string[] => [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${join(c.runDir, "component-certs")}`,
    "--leader-elect=false",
    "--v=1",
  ];
  const sched = await startDaemon("kube-scheduler", join(c.binDir, "kube-scheduler"), common(schedKc, schedPort), {
    logFile: join(c.runDir, "kube-scheduler.log"),
    recordFile: join(c.runDir, "kube-scheduler.json"),
    nice: componentNice(),
  });
  const cm = await startDaemon(
    "kube-controller-manager",
    join(c.binDir, "kube-controller-manager"),
    [
      ...common(cmKc, cmPort),
      "--use-service-account-credentials=true",
      `--service-account-private-key-file=${c.saPrivateKey}`,
      `--root-ca-file=${c.caFile}`,
      `--cluster-signing-cert-file=${c.caFile}`,
      `--cluster-signing-key-file=${c.caKey}`,
      "--controllers=*,-bootstrapsigner,-tokencleaner,-cloud-node-lifecycle,-route,-service",
      "--node-monitor-period=2s",
    ],
    {
      logFile: join(c.runDir, "kube-controller-manager.log"),
      recordFile: join(c.runDir, "kube-controller-manager.json"),
      nice: componentNice(),
    },
  );
  const healthy = (rec: DaemonRecord, port: number) =>
    waitUntilReady(rec, () => getOk(`https://127.0.0.1:${port}/healthz`, { insecure: true }), 60_000);
  await Promise.all([healthy(sched, schedPort), healthy(cm, cmPort)]);
}

export async function stopComponents(runDir: string): Promise<void> {
  await stopDaemon(join(runDir, "kube-controller-manager.json"));
  await stopDaemon(join(runDir, "kube-scheduler.json"));
}
