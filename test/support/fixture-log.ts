/**
 * The log builder of the replay-validation fixtures (test/support/compose-replay-fixtures.ts): one
 * log of consecutive sequences, and the shapes the services write for a runtime coming up, a run
 * placed and started, and a DAG executed as the runtime computes its outputs.
 */
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseEvent, type DagDefinition, type DroverEvent, type EventType } from "../../contracts/index.ts";
import { canonicalJson, executionIdFromDigest, executionIdSeed, stepInputs } from "../../aggregates/step-inputs.ts";
import { exampleEvent } from "./example-events.ts";

export const DIR = resolve(import.meta.dirname, "../fixtures");
export const PREFIX = "fixture.drover";
export const TENANT = "t-fixture";
export const sha = (s: string) => createHash("sha256").update(s).digest("hex");
export const execIdOf = (run: string, lr: string) => executionIdFromDigest(sha(executionIdSeed(run, lr)));

export interface Line {
  seq: number;
  subject: string;
  event: DroverEvent;
}
export type Writer = DroverEvent["writer"];
export const svc = (service: Writer["service"], instanceId = `${service}-1`): Writer => ({ service, instanceId });
export const rtWriter = (rt: string, inc: string, epoch: number): Writer =>
  ({ service: "runtime", instanceId: rt, runtimeInstanceId: rt, hostIncarnation: inc, epoch }) as Writer;

/** Builds one log: events get consecutive sequences, subjects from the aggregate and event name. */
export class Log {
  readonly lines: Line[] = [];
  private clock: number;
  constructor(
    private readonly name: string,
    start: string,
  ) {
    this.clock = Date.parse(start);
  }
  add<T extends EventType>(
    type: T,
    id: string,
    data: unknown,
    writer: Writer,
    extra: { correlationId?: string; causationId?: string } = {},
  ): DroverEvent {
    const [agg, ev] = type.split(".") as [string, string];
    const tenantScoped = agg !== "runtime";
    this.clock += 7;
    const base = exampleEvent(type) as DroverEvent;
    const event = parseEvent({
      ...base,
      eventId: `ev-${this.name}-${this.lines.length + 1}`,
      occurredAt: new Date(this.clock).toISOString(),
      ...(tenantScoped ? { tenantId: TENANT } : {}),
      correlationId: extra.correlationId ?? "fixture",
      causationId: extra.causationId ?? "fixture",
      writer,
      data,
    });
    return this.push(event, tenantScoped ? `${PREFIX}.${agg}.${TENANT}.${id}.${ev}` : `${PREFIX}.runtime.${id}.${ev}`);
  }
  /** Appends a recorded event verbatim (only its sequence is new). */
  push(event: DroverEvent, subject: string): DroverEvent {
    this.lines.push({ seq: this.lines.length + 1, subject, event });
    return event;
  }
}

export function write(name: string, lines: readonly Line[]): void {
  const path = `${DIR}/${name}`;
  if (existsSync(path)) {
    console.log(`kept ${name} (fixtures are never edited)`);
    return;
  }
  writeFileSync(
    path,
    lines.map((l, i) => JSON.stringify({ seq: i + 1, subject: l.subject, event: l.event })).join("\n") + "\n",
  );
  console.log(`wrote ${name} (${lines.length} events)`);
}

/** A runtime coming up through the provisioner: registered, host started, endpoint, capacity. */
export function runtimeUp(log: Log, rt: string, pid: number, inc: string, scaleOutRequestId?: string): void {
  const p = svc("provisioner");
  log.add(
    "runtime.registered",
    rt,
    {
      controlPlaneId: "cp-fixture",
      tenantId: TENANT,
      isolationMode: "dedicated",
      allowSharedFallback: false,
      pool: "default",
      hostProvider: "process",
      transport: "http",
      sizing: { workers: 2, maxConcurrentRuns: 2, localQueueCapacity: 8, maxWorkersPerRun: 2 },
      requiredLayers: ["resource", "host", "endpoint", "command"],
      ...(scaleOutRequestId ? { scaleOutRequestId } : {}),
    },
    p,
  );
  log.add("runtime.host-started", rt, { hostIncarnation: inc, pid, convergence: "created" }, p);
  log.add(
    "runtime.endpoint-published",
    rt,
    {
      endpoint: `http://127.0.0.1:${40000 + (pid % 1000)}`,
      aliases: [],
      routingHeader: "x-drover-runtime-instance-id",
      hostIncarnation: inc,
    },
    p,
  );
  log.add("runtime.capacity-published", rt, { hostIncarnation: inc }, p);
}

/** Submission → admission → dispatch → run started. */
export function placeAndStart(
  log: Log,
  run: string,
  rt: string,
  lr: string,
  inc: string,
  epoch: number,
  o: { executionId?: string; why: string; recovery?: boolean },
): string {
  const a = svc("admission");
  log.add(
    "run.admitted",
    run,
    {
      runtimeInstanceId: rt,
      localRunId: lr,
      reservationId: `res-${lr}`,
      candidates: [{ runtimeInstanceId: rt, rank: 0, why: o.why }],
      recovery: o.recovery ?? false,
    },
    a,
    { correlationId: run },
  );
  log.add(
    "run.dispatched",
    run,
    {
      runtimeInstanceId: rt,
      localRunId: lr,
      transport: "http",
      hostIncarnation: inc,
      ...(o.executionId ? { resumeExecutionId: o.executionId } : {}),
    },
    a,
    { correlationId: run },
  );
  const executionId = o.executionId ?? execIdOf(run, lr);
  log.add("run.started", run, { executionId, localRunId: lr, runtimeInstanceId: rt }, rtWriter(rt, inc, epoch), {
    correlationId: run,
    causationId: `local-run:${lr}`,
  });
  return executionId;
}

/** A journal of `dag` executed in (level, id) order as the runtime computes outputs; `fail` maps step → failing attempts. */
export function execute(
  log: Log,
  run: string,
  lr: string,
  executionId: string,
  dag: DagDefinition,
  rt: string,
  inc: string,
): void {
  const w = rtWriter(rt, inc, 0);
  const c = { correlationId: run, causationId: `local-run:${lr}` };
  log.add(
    "exec.started",
    executionId,
    {
      sharedRunId: run,
      localRunId: lr,
      runtimeInstanceId: rt,
      dagDigest: sha(canonicalJson(dag)),
      stepCount: dag.steps.length,
      epoch: 0,
    },
    w,
    c,
  );
  const digests = new Map<string, string>();
  for (const step of dag.steps) {
    const fails = step.kind === "flaky" ? step.params.failAttempts : 0;
    for (let attempt = 1; attempt <= fails; attempt++) {
      log.add(
        "exec.step-failed",
        executionId,
        {
          stepId: step.id,
          attempt,
          error: `flaky step fails attempt ${attempt} of the first ${fails}`,
          retryAt: new Date(Date.parse("2026-12-01T10:00:00.000Z") + attempt * 10).toISOString(),
        },
        w,
        c,
      );
    }
    const inputDigest = sha(stepInputs(step, digests));
    const output = step.kind === "flaky" ? { digest: inputDigest, attempt: fails + 1 } : { digest: inputDigest };
    const outputDigest = sha(canonicalJson(output));
    digests.set(step.id, outputDigest);
    log.add(
      "exec.step-completed",
      executionId,
      { stepId: step.id, attempt: fails + 1, output, outputDigest, durationMs: 5 },
      w,
      c,
    );
  }
  const outputDigest = sha(canonicalJson([...digests.entries()].sort(([a], [b]) => (a < b ? -1 : 1))));
  log.add("exec.completed", executionId, { outputDigest }, w, c);
  log.add("run.completed", run, { executionId, localRunId: lr, outputDigest }, w, c);
}
