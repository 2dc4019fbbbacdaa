import {
  ERROR_CATALOGUE,
  EVENT_TYPES,
  precompileEventSchemas,
  RuntimeCommand,
  type HostIncarnation,
  type RuntimeInstanceId,
} from "../../../contracts/index.ts";
import { prepareHttpServer, type PreparedHttpServer } from "../http/server.ts";
import type { CommandHandler } from "./command-handler.ts";

/** The events a runtime writes and reads: its executions' journals and its runs' placements. */
const RUNTIME_EVENTS = EVENT_TYPES.filter((t) => t.startsWith("exec.") || t.startsWith("run."));

const payload = {
  sharedRunId: "run-warm-up",
  localRunId: "lr-warm-up",
  tenantId: "warm-up",
  dag: {
    steps: [
      { id: "s1", kind: "compute", dependsOn: [] },
      { id: "s2", kind: "sleep", params: { durationMs: 1 }, dependsOn: ["s1"] },
    ],
  },
  dispatchedSeq: 1,
  correlationId: "warm-up",
};
const common = { runtimeInstanceId: "rt-warm-up", correlationId: "warm-up" };
/** One valid command of each operation that carries a run (and the probe's): parsed, never executed. */
const SAMPLE_COMMANDS = [
  { operation: "DispatchRun", payload, ...common },
  { operation: "ResumeExecution", payload: { ...payload, executionId: "exec-warm-up", epoch: 1 }, ...common },
  { operation: "GetQueueStatus", payload: {}, ...common },
];

/**
 * Compiles, before a pooled runtime is bound (main.ts), the parsers its first commands, journal
 * reads and appends would otherwise compile on the critical path of a recovery: zod compiles each
 * event schema and the command schema on first use, and in a fresh process the first resume paid
 * for them between its dispatch and `resumed` (its command's parse 13–93 ms and its 33-event journal's
 * decode 35–126 ms at load 15, where the same work warm is a few ms). Pure CPU on sample values: no
 * identity, tenant, connection or IO. Returns what it compiled and how many samples the schemas accepted.
 */
export function warmUpParsers(): { readonly events: number; readonly commands: number } {
  const events = precompileEventSchemas(RUNTIME_EVENTS);
  const commands = SAMPLE_COMMANDS.filter((c) => RuntimeCommand.safeParse(c).success).length;
  return { events, commands };
}

/** How many samples warmUpParsers parses (each must be accepted, or it warms a refusal's path instead). */
export const WARM_UP_COMMANDS = SAMPLE_COMMANDS.length;
export const WARM_UP_EVENTS = RUNTIME_EVENTS.length;

/**
 * Builds a pooled runtime's HTTP command server before its binding (main.ts) and readies it
 * (Fastify's boot: its route and hooks compiled; nothing listens), so the binding only sets the
 * handler and listens: ~11 ms of CPU per fresh process (build 6–7, ready 4) leave the bind's
 * critical path. Not warmed by requests: `inject`'s first use loads light-my-request (~14 ms more),
 * spent by every member while it saves a bound runtime's first command ~4 ms. Until it is served
 * (`serve` in startRuntime) every command is refused as misdirected: the member holds no identity yet.
 */
export async function prepareCommandServer(hostIncarnation: string): Promise<PreparedHttpServer> {
  const unbound: CommandHandler = async (cmd) => ({
    httpStatus: ERROR_CATALOGUE["runtime-misdirected"].httpStatus,
    result: {
      success: false,
      operation: "unknown",
      runtimeInstanceId: UNBOUND as RuntimeInstanceId,
      hostIncarnation: hostIncarnation as HostIncarnation,
      payload: {},
      failureReason: "runtime-misdirected",
      failureDetail: `a pooled runtime is not bound yet (routing header ${JSON.stringify(cmd.routingHeader ?? null)})`,
      timings: { receivedAt: new Date().toISOString(), handledMs: 0 },
    },
  });
  const prepared = prepareHttpServer(unbound);
  await prepared.server.ready();
  return prepared;
}

/** The runtime id an unbound pooled runtime's refusals name (never a registered runtime's: no `rt-` prefix). */
export const UNBOUND = "pool-unbound";
