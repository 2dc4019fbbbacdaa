import {
  contractViolation,
  decodeJson,
  Heartbeat,
  isSubjectSafeId,
  RuntimeInstanceId,
  type StoredHeartbeat,
} from "../contracts/index.ts";
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import type { StreamLayout } from "./layout.ts";
import { heartbeatSubject } from "./subjects.ts";

/**
 * A stored heartbeat as the control plane may believe it. The runtime is the one its subject names
 * (`<heartbeatPrefix>.<RuntimeInstanceId>`: only that runtime's credentials may publish there), and
 * a payload naming another runtime is refused as forged. Its time is when JetStream stored it
 * (`storedAtMs`, the server's clock), never the writer's `at`: a runtime cannot keep itself "fresh"
 * with a future timestamp. The writer's `at` is kept as `takenAt` (when its counts are from, on the
 * clock its command answers are timed with), never later than the stored time: a beat cannot have
 * been taken after it was stored, and a future `takenAt` would make admission treat every run the
 * runtime accepted as already in its counts.
 */
export function storedHeartbeat(
  heartbeatPrefix: string,
  m: { readonly subject: string; readonly data: Uint8Array; readonly seq: number },
  storedAtMs: number,
): StoredHeartbeat {
  const id = m.subject.slice(heartbeatPrefix.length + 1);
  if (!m.subject.startsWith(`${heartbeatPrefix}.`) || !isSubjectSafeId(id))
    throw contractViolation("heartbeat", `subject ${m.subject} names no runtime`, { subject: m.subject });
  const hb = decodeJson(Heartbeat, m.data, "heartbeat", { seq: m.seq, subject: m.subject });
  if (hb.runtimeInstanceId !== id)
    throw contractViolation("heartbeat", `payload names runtime ${hb.runtimeInstanceId}, its subject ${id}`, {
      subject: m.subject,
    });
  const takenAtMs = Math.min(Date.parse(hb.at), storedAtMs);
  return {
    ...hb,
    runtimeInstanceId: RuntimeInstanceId.parse(id),
    at: new Date(storedAtMs).toISOString(),
    takenAt: new Date(takenAtMs).toISOString(),
  };
}

/**
 * The stream's last message on a runtime's heartbeat subject (a Direct Get), or null when there is
 * none or the stream does not answer: the latest word of a runtime, whatever a follower has seen yet.
 * Recovery folds it before calling a runtime silent; the provisioner reads whether an exit ended a drain.
 */
export const lastHeartbeatMessage = (
  jsm: JetStreamManager,
  layout: StreamLayout,
  runtimeInstanceId: string,
): Promise<StoredMsg | null> =>
  jsm.direct
    .getMessage(layout.heartbeatStream, { last_by_subj: heartbeatSubject(layout, runtimeInstanceId) })
    .catch(() => null);
