import { createHash } from "node:crypto";
import { foldRun, isTerminal } from "../../../aggregates/run.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import { DroverError, type Credential } from "../../../contracts/index.ts";
import { checkSignal, repeatOf, signalOf, signalPrincipalOf, waitOf } from "../domain/signal.ts";
import type { ApiDeps } from "./deps.ts";
import { decideOnRun } from "./run-append.ts";

export interface SignalAnswer {
  readonly outcome: "accepted" | "duplicate";
  readonly signal: {
    readonly name: string;
    readonly stepId: string;
    readonly by: string;
    readonly signalId: string | null;
    readonly payloadDigest: string;
    readonly seq: number;
  };
}

/** sha256 of the payload's canonical JSON: what the run's event, the journal's resolution and the answer name. */
const payloadDigestOf = (payload: unknown): string => createHash("sha256").update(canonicalJson(payload)).digest("hex");

/**
 * Appends `run.signal-received` for the run's wait `name` (docs/control-flow.md "Waits"),
 * conditionally on the run's last sequence, after every check passed (nothing is written for a
 * refused signal). The first signal of a name is the only one: a repeat with its signal id answers it
 * again, anything else is `wait-already-signalled`. A conflict re-reads the run and decides again.
 */
export async function signalRun(
  deps: ApiDeps,
  who: Extract<Credential, { role: "tenant" }>,
  sharedRunId: string,
  name: string,
  body: { readonly payload: unknown; readonly signalId?: string | undefined },
  requestId: string,
): Promise<SignalAnswer> {
  return decideOnRun<SignalAnswer, "run.signal-received">(deps, who.tenantId, sharedRunId, requestId, (history) => {
    const s = foldRun(history.events);
    const submitted = history.events.find((e) => e.event.type === "run.submitted")?.event;
    if (s.status === "none" || submitted?.type !== "run.submitted")
      throw new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });
    const wait = waitOf(submitted.data.dag, name, sharedRunId);
    checkSignal(wait, who, body.payload);
    const first = signalOf(history.events, name);
    if (first) return { answer: answer("duplicate", wait.stepId, repeatOf(first, body.signalId, who.tenantId)) };
    if (isTerminal(s.status))
      throw new DroverError("run-terminal", `run ${sharedRunId} already ${s.status}`, {
        details: { sharedRunId, status: s.status },
      });
    const data = {
      name,
      by: signalPrincipalOf(who),
      ...(body.signalId === undefined ? {} : { signalId: body.signalId }),
      payload: body.payload as never,
      payloadDigest: payloadDigestOf(body.payload),
    };
    return {
      append: { type: "run.signal-received", data },
      answer: (seq, event) => answer("accepted", wait.stepId, { seq, event }),
    };
  });
}

function answer(
  outcome: SignalAnswer["outcome"],
  stepId: string,
  s: { seq: number; event: { data: { name: string; by: string; signalId?: string; payloadDigest: string } } },
): SignalAnswer {
  const d = s.event.data;
  return {
    outcome,
    signal: {
      name: d.name,
      stepId,
      by: d.by,
      signalId: d.signalId ?? null,
      payloadDigest: d.payloadDigest,
      seq: s.seq,
    },
  };
}
