import type { Clock } from "../../../platform/clock.ts";
import { timingSafeEqual } from "node:crypto";
import {
  DagMemo,
  ERROR_CATALOGUE,
  isDroverError,
  parseRuntimeCommand,
  type RuntimeCommand,
  type ErrorCode,
  type HostIncarnation,
  type RuntimeInstanceId,
  type RuntimeCommandResult,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import type { RuntimeInstance } from "./runtime-instance.ts";
import type { DispatchReadAhead } from "./execution-open.ts";
import { storeFailureOf } from "./store-failure.ts";

/** A command as any transport received it: the routing header, the token and the raw JSON body. */
export interface IncomingCommand {
  readonly routingHeader: string | undefined;
  readonly token: string | undefined;
  readonly body: unknown;
}

/** The transport-neutral answer: the result envelope and the HTTP status a web transport should use. */
export interface CommandAnswer {
  readonly httpStatus: number;
  readonly result: RuntimeCommandResult;
}

export interface CommandHandlerDeps {
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly hostIncarnation: HostIncarnation;
  readonly token: string;
  readonly instance: RuntimeInstance;
  readonly clock: Clock;
}

export type CommandHandler = (cmd: IncomingCommand) => Promise<CommandAnswer>;

const sameSecret = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/**
 * The ONE command handler behind both transports (runtime.md "Command API"). In order: the routing
 * header must be this runtime's id (else `runtime-misdirected`), the instance token must match
 * (else `command-unauthorized`), the body must parse as a RuntimeCommand (else `contract-violation`,
 * or `dag-invalid` when only the DAG is wrong) and name this runtime as its target (else
 * `runtime-misdirected`). Only then does the operation run. A refused command changes nothing and
 * writes nothing. Every answer names this runtime and its host incarnation; it never throws.
 */
export function createCommandHandler(deps: CommandHandlerDeps): CommandHandler {
  // The DAGs this runtime was dispatched, each checked once (contracts `parseRuntimeCommand`).
  const dags = new DagMemo();
  return async (cmd) => {
    const received = deps.clock.now();
    const operation =
      typeof (cmd.body as { operation?: unknown } | null)?.operation === "string"
        ? String((cmd.body as { operation: string }).operation).slice(0, 64)
        : "unknown";
    const answer = (
      payload: Record<string, unknown>,
      failure?: { code: ErrorCode; detail: string },
    ): CommandAnswer => ({
      httpStatus: failure ? ERROR_CATALOGUE[failure.code].httpStatus : 200,
      result: {
        success: !failure,
        operation,
        runtimeInstanceId: deps.runtimeInstanceId,
        hostIncarnation: deps.hostIncarnation,
        payload,
        ...(failure ? { failureReason: failure.code, failureDetail: failure.detail.slice(0, 2000) } : {}),
        timings: {
          receivedAt: received.toISOString(),
          handledMs: Math.max(0, deps.clock.now().getTime() - received.getTime()),
        },
      },
    });
    if (cmd.routingHeader !== deps.runtimeInstanceId) {
      return answer(
        {},
        {
          code: "runtime-misdirected",
          detail: `routing header names ${JSON.stringify(cmd.routingHeader ?? null)}, this is ${deps.runtimeInstanceId}`,
        },
      );
    }
    if (!sameSecret(cmd.token, deps.token))
      return answer({}, { code: "command-unauthorized", detail: "missing or wrong runtime command token" });
    // A DispatchRun's dispatch check reads the log (one Direct Get): sent first, and the event loop
    // turned once so the request leaves before the synchronous schema check below, which overlaps it.
    const early = deps.instance.readAhead(cmd.body);
    if (early) await new Promise<void>((ok) => setImmediate(ok));
    const parsed = parseRuntimeCommand(cmd.body, dags);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
      const dagOnly = parsed.error.issues.every((i) => i.path[0] === "payload" && i.path[1] === "dag");
      return answer(
        { issues: issues.slice(0, 20) },
        { code: dagOnly ? "dag-invalid" : "contract-violation", detail: issues.slice(0, 5).join("; ") },
      );
    }
    const c = parsed.data;
    if (c.runtimeInstanceId !== deps.runtimeInstanceId) {
      return answer(
        {},
        {
          code: "runtime-misdirected",
          detail: `command targets ${c.runtimeInstanceId}, this is ${deps.runtimeInstanceId}`,
        },
      );
    }
    try {
      return answer(await execute(deps.instance, c, early));
    } catch (e) {
      const err = storeFailureOf(e);
      return answer(isDroverError(e) ? { details: err.details } : {}, { code: err.code, detail: err.message });
    }
  };
}

async function execute(
  instance: RuntimeInstance,
  c: RuntimeCommand,
  early?: DispatchReadAhead,
): Promise<Record<string, unknown>> {
  switch (c.operation) {
    case "DispatchRun":
      return instance.dispatch(c.payload, early);
    case "ResumeExecution":
      return instance.resume(c.payload);
    case "GetRunStatus":
      return { run: instance.status(c.payload.localRunId) };
    case "GetQueueStatus":
      return { queue: instance.queueStatus() };
    case "PauseQueue":
      instance.pause();
      return { queue: instance.queueStatus() };
    case "ResumeQueue":
      instance.resumeQueue();
      return { queue: instance.queueStatus() };
    case "CancelRun":
      return { run: instance.cancel(c.payload.localRunId) };
    case "Drain":
      instance.drain();
      return { queue: instance.queueStatus() };
    default:
      return assertNever(c);
  }
}
