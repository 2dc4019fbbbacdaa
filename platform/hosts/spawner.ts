import { readFileSync } from "node:fs";
import { processIncarnation } from "../process-incarnation.ts";
import { incarnationState, parseProcessIncarnation } from "./proc-table.ts";

/**
 * The environment variable naming the exact process (`pid:<pid>:<starttime>`) that spawned a
 * process host: the provisioner that owns it while that incarnation runs. Set by the process
 * strategy on every host it spawns (pool members too); the runtime never reads it.
 */
export const SPAWNER_ENV = "DROVER_HOST_SPAWNER";

/** This process's incarnation, as the hosts it spawns record it. */
export const spawnerOfSelf = (): string => processIncarnation(process.pid);

/**
 * Whether the process host `pid:<pid>:<starttime>` (this process space's) runs and the
 * provisioner that spawned it is gone: an orphan the next provisioner of its control plane adopts
 * (services/provisioner/README.md "Adopted runtimes"). `false` when the host is gone, its spawner still runs, or its
 * environment does not name one (a host started before spawners were recorded, or by someone
 * else): such a host is never adopted. Reads `/proc/<pid>/environ` (same user) only for the one
 * variable, and checks the host's own incarnation after the read, so a reused pid is never taken
 * for it.
 */
export function isOrphanedHost(hostIncarnation: string): boolean {
  const inc = parseProcessIncarnation(hostIncarnation);
  if (!inc || incarnationState(inc.pid, inc.startTime) !== "running") return false;
  let environ: string;
  try {
    environ = readFileSync(`/proc/${inc.pid}/environ`, "utf8");
  } catch {
    return false;
  }
  if (incarnationState(inc.pid, inc.startTime) !== "running") return false;
  const entry = environ.split("\0").find((e) => e.startsWith(`${SPAWNER_ENV}=`));
  const spawner = entry && parseProcessIncarnation(entry.slice(SPAWNER_ENV.length + 1));
  return !!spawner && incarnationState(spawner.pid, spawner.startTime) === "gone";
}
