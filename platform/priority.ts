/**
 * CPU priority classes (docs/decisions.md): on a machine short of cores, the control path (nats-server,
 * Redis, every decider, the API, runtimes) wins a core over the read models (the forensics projector and
 * FerretDB), which are eventually consistent and catch up once the burst is over. A class is a nice value:
 * `control` 0 (unchanged), `read-model` 10. `make run` (scripts/with-priority.sh, the same table) gives
 * each of its services its own session and so its own scheduler autogroup, where a nice value counts only
 * inside the group, so it sets the group's nice (/proc/<pid>/autogroup) as well; the harness's processes
 * share their caller's group, so only the process's own nice applies (writing the group's would lower the
 * caller and every sibling with it). DROVER_PRIORITY=off leaves every process at its parent's priority.
 */
export type PriorityClass = "control" | "read-model";

export const PRIORITY_NICE: Readonly<Record<PriorityClass, number>> = { control: 0, "read-model": 10 };

const READ_MODELS: ReadonlySet<string> = new Set(["forensics", "ferretdb"]);

export const priorityClassOf = (name: string): PriorityClass => (READ_MODELS.has(name) ? "read-model" : "control");

export const prioritiesOn = (env: NodeJS.ProcessEnv = process.env): boolean => env.DROVER_PRIORITY !== "off";

/**
 * The command that starts `name` at its class's priority: `nice -n <n> <cmd> <args>` (set before the
 * exec, so every thread the process makes inherits it; a nice set from outside after the spawn reaches
 * only the main thread), or the command itself for `control` or when turned off. Says so on stderr.
 */
export function prioritized(
  name: string,
  cmd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { cmd: string; args: string[] } {
  const cls = priorityClassOf(name);
  const nice = PRIORITY_NICE[cls];
  if (nice === 0 || !prioritiesOn(env)) return { cmd, args: [...args] };
  console.warn(`[drover] ${name} runs at priority class ${cls} (nice ${nice}; DROVER_PRIORITY=off: unchanged)`);
  return { cmd: "nice", args: ["-n", String(nice), cmd, ...args] };
}
