import { historyPrefixOf, type StreamLayout } from "../../streams/index.ts";
import { outputsPrefixOf, outputsStreamOf } from "../output-store.ts";
import { stepCachePrefixOf, stepCacheStreamOf } from "../step-cache-store.ts";
import { leasePrefixOf } from "../lease.ts";
import { archivePrefixOf, archiveStreamOf } from "../archive-store.ts";
import { snapshotPrefixOf, snapshotStreamOf } from "../snapshots/store.ts";

/**
 * Who may do what on NATS: one identity per party, each with only the publish/subscribe and
 * JetStream API subjects its job needs (docs/nats-identities.md holds the same table in prose;
 * `rights.unit.test.ts` checks the generated server configuration against it). Runtimes are not
 * here: their rights are minted per RuntimeInstanceId by the auth callout (runtime-rights.ts).
 */
export const SERVICE_IDENTITIES = [
  "setup",
  "api",
  "admission",
  "capacity",
  "provisioner",
  "recovery",
  "forensics",
  "scheduler",
  "operator",
] as const;
export type ServiceIdentity = (typeof SERVICE_IDENTITIES)[number];
/**
 * `harness` exists only on the private servers tests start: it plays every party. `producer-<tenant>`
 * is a trusted producer of one tenant (docs/producers.md): it may submit that tenant's runs, nothing else.
 */
export type Identity = ServiceIdentity | typeof KICKER | typeof COMPACTOR | "harness" | `producer-${string}`;
export const producerIdentity = (tenantId: string): Identity => `producer-${tenantId}`;

/**
 * The one identity of the system account: recovery holds it (DROVER_NATS_KICK_CREDS) to disconnect a
 * fenced runtime's live connections at once (kick.ts). It may only list connections
 * (`$SYS.REQ.SERVER.PING.CONNZ`, every server answers) and kick one by client id
 * (`$SYS.REQ.SERVER.<server id>.KICK`), and hear the server's advisory of each closed connection of
 * the DROVER account (`$SYS.ACCOUNT.DROVER.DISCONNECT`, disconnects.ts: a health signal); nothing of
 * the DROVER account, no JetStream.
 */
export const KICKER = "kicker";
export const KICK_RIGHTS: Rights = {
  publish: { allow: ["$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.SERVER.*.KICK"], deny: [] },
  // The account name is server-config.ts DROVER_ACCOUNT (not imported: that module imports this one).
  subscribe: { allow: [`_INBOX_${KICKER}.>`, "$SYS.ACCOUNT.DROVER.DISCONNECT"], deny: [] },
  allowResponses: false,
};

/**
 * The compactor (`drover admin compact`, docs/retention.md): the only identity that may purge the
 * event stream. NATS cannot narrow a purge by subject (the filter is in the request body), so the
 * right is the whole stream's; what it purges is decided by the compactor's checks. It reads the
 * event stream, writes and reads the archive, and appends nothing.
 */
export const COMPACTOR = "compactor";

export interface Rights {
  readonly publish: { readonly allow: readonly string[]; readonly deny: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[]; readonly deny: readonly string[] };
  /** May answer requests it received (control requests, auth callout). */
  readonly allowResponses: boolean;
}

/** The subject and stream names one deployment's rights are written over. */
export interface AuthScope {
  readonly events: string;
  readonly heartbeats: string;
  readonly control: string;
  readonly eventStream: string;
  readonly heartbeatStream: string;
  readonly deadLetterStream: string;
  /** First subject tokens of stored outputs (`drover-out`): `<outputs>.<tenant>.<sha256>.<chunk>`. */
  readonly outputs: string;
  readonly outputsStream: string;
  /** First subject tokens of the step cache index (`drover-cache`): `<stepCache>.<tenant>.<key>`. */
  readonly stepCache: string;
  readonly stepCacheStream: string;
  /** First subject tokens of single-writer leases (`drover-lease`): `<leases>.<service>.<name>` (platform/lease.ts). */
  readonly leases: string;
  /** First subject tokens of the archive of compacted runs (`drover-archive`), and its stream. */
  readonly archive: string;
  readonly archiveStream: string;
  /** First subject tokens of snapshots (`drover-snap`): `<snapshots>.<owner>.<part>` (platform/snapshots/store.ts). */
  readonly snapshots: string;
  readonly snapshotStream: string;
  /** First subject tokens of runtimes' history requests (`drover-read`): `<history>.<exec|run>.<tenant>.<id>` (streams/history-responder.ts). */
  readonly history: string;
}

/** The durable consumers drover has; only setup creates, changes or deletes them. */
export const SCALE_OUT_DURABLE = "provisioner-scaleout-requested";

export function scopeOf(layout: StreamLayout): AuthScope {
  return {
    events: layout.eventPrefix,
    heartbeats: layout.heartbeatPrefix,
    control: `${layout.eventPrefix}-ctl`,
    eventStream: layout.eventStream,
    heartbeatStream: layout.heartbeatStream,
    deadLetterStream: layout.deadLetterStream,
    outputs: outputsPrefixOf(layout),
    outputsStream: outputsStreamOf(layout),
    stepCache: stepCachePrefixOf(layout),
    stepCacheStream: stepCacheStreamOf(layout),
    leases: leasePrefixOf(layout),
    archive: archivePrefixOf(layout),
    archiveStream: archiveStreamOf(layout),
    snapshots: snapshotPrefixOf(layout),
    snapshotStream: snapshotStreamOf(layout),
    history: historyPrefixOf(layout),
  };
}

/**
 * Every tagged layout at once (`<tag>.drover…`, streams `DROVER_<TAG>`): what a private test server,
 * shared by many isolated tests, grants. Stream names cannot be partly wildcarded, so the stream
 * token is `*` there; production configurations name their streams exactly.
 */
export const TAGGED_SCOPE: AuthScope = {
  events: "*.drover",
  heartbeats: "*.drover-hb",
  control: "*.drover-ctl",
  eventStream: "*",
  heartbeatStream: "*",
  deadLetterStream: "*",
  outputs: "*.drover-out",
  outputsStream: "*",
  stepCache: "*.drover-cache",
  stepCacheStream: "*",
  leases: "*.drover-lease",
  archive: "*.drover-archive",
  archiveStream: "*",
  snapshots: "*.drover-snap",
  snapshotStream: "*",
  history: "*.drover-read",
};

/** Subject of event `name` of aggregate `agg` for any tenant and id. */
export const eventOf = (s: AuthScope, agg: string, name: string): string =>
  agg === "runtime" ? `${s.events}.runtime.*.${name}` : `${s.events}.${agg}.*.*.${name}`;

/**
 * Read-only JetStream API on one stream: info, message and direct gets, ordered (ephemeral)
 * consumers. Consumers only by the unnamed `$JS.API.CONSUMER.CREATE.<stream>`, on which
 * nats-server refuses a `durable_name` in the body ("consumer expected to be ephemeral"): the named
 * form `CREATE.<stream>.<name>[.<filter>]` would create a durable of any new name that way. drover's
 * ordered consumers always pass `filter_subjects` as an array, which the client sends unnamed.
 */
export const jsRead = (stream: string): string[] => [
  `$JS.API.STREAM.INFO.${stream}`,
  `$JS.API.STREAM.MSG.GET.${stream}`,
  `$JS.API.DIRECT.GET.${stream}`,
  `$JS.API.DIRECT.GET.${stream}.>`,
  `$JS.API.CONSUMER.CREATE.${stream}`,
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
  `$JS.API.CONSUMER.DELETE.${stream}.*`,
  `$JS.API.CONSUMER.INFO.${stream}.*`,
];

/**
 * Reading stored outputs (platform/output-store.ts): each chunk by the subject-form Direct Get
 * (`$JS.API.DIRECT.GET.<stream>.<chunk subject>`), over the outputs of the tenants in `tenants`
 * (`*`: every tenant). No consumer on the outputs stream: nobody may create one there but setup.
 */
export const outputsRead = (s: AuthScope, tenants: readonly string[] = ["*"]): string[] =>
  // Each chunk by the subject-form Direct Get (platform/output-store.ts): no consumer, no stream info.
  tenants.map((t) => `$JS.API.DIRECT.GET.${s.outputsStream}.${s.outputs}.${t}.>`);

/**
 * The step cache index (docs/step-cache.md "Inspect and clear"): the api clears and lists tenants'
 * keys for their callers, the operator rebuilds them (`drover admin step-cache-rebuild`). Writes and
 * reads by subject (`<stepCache>.<tenant>.<key>`, the subject-form Direct Get); no consumer.
 */
export const stepCacheRights = (s: AuthScope): string[] => [
  `${s.stepCache}.*.*`,
  `$JS.API.DIRECT.GET.${s.stepCacheStream}.${s.stepCache}.*.*`,
];

/** The services that snapshot their folded state (platform/snapshots): each under its own name only. */
export const SNAPSHOT_OWNERS: readonly ServiceIdentity[] = ["admission", "recovery", "provisioner", "api"];

/**
 * Writing and reading one's own snapshot: publish to `<snapshots>.<owner>.>` and the subject-form
 * Direct Get there. No consumer, no other owner's key, no stream management.
 */
export const snapshotRights = (s: AuthScope, owner: string): string[] => [
  `${s.snapshots}.${owner}.>`,
  `$JS.API.DIRECT.GET.${s.snapshotStream}.${s.snapshots}.${owner}.>`,
];

/** No one but setup touches a durable consumer's definition, and only its owner pulls from it. */
const durableDeny = (s: AuthScope, pulls: boolean): string[] => [
  "$JS.API.CONSUMER.DURABLE.CREATE.>",
  `$JS.API.CONSUMER.CREATE.${s.eventStream}.${SCALE_OUT_DURABLE}`,
  `$JS.API.CONSUMER.CREATE.${s.eventStream}.${SCALE_OUT_DURABLE}.>`,
  `$JS.API.CONSUMER.DELETE.${s.eventStream}.${SCALE_OUT_DURABLE}`,
  ...(pulls ? [] : [`$JS.API.CONSUMER.MSG.NEXT.${s.eventStream}.${SCALE_OUT_DURABLE}`]),
];

/** The `terminated` advisory a follower publishes for a message it steps over (streams/skip.ts). */
const skipAdvisory = (s: AuthScope): string => `$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${s.eventStream}.*`;

const events = (s: AuthScope, agg: string, names: readonly string[]): string[] => names.map((n) => eventOf(s, agg, n));

/** What each service appends (by aggregate and event name). */
export const WRITES: Readonly<Record<ServiceIdentity, Readonly<Record<string, readonly string[]>>>> = {
  setup: {},
  operator: {},
  capacity: {},
  forensics: {},
  api: {
    run: ["submitted", "cancel-requested", "forked", "signal-received", "upgraded"],
    schedule: ["created", "paused", "resumed", "deleted", "backfill-requested"],
    // A deploy request names the credential that asked; the provisioner answers it (docs/worker-versions.md).
    worker: ["deploy-requested"],
  },
  // A declared producer of every tenant's runs: each fire's run.submitted is atomic with its schedule.fired.
  scheduler: { run: ["submitted", "cancel-requested"], schedule: ["fired", "skipped"] },
  admission: {
    run: [
      // A run step's child run and its cancel (docs/control-flow.md "Child runs"): from the parent's journal.
      "submitted",
      "cancel-requested",
      "admitted",
      "dispatched",
      "dispatch-failed",
      "rejected",
      "queued-globally",
      "scale-out-requested",
      "replacement-selected",
      "cancelled",
    ],
    scaleout: ["requested", "cancelled"],
    // Per-key flow control (docs/flow-control.md): the key's conditional admissions.
    flowkey: ["acquired"],
  },
  provisioner: {
    runtime: [
      "registered",
      "host-start-requested",
      "host-started",
      "host-start-failed",
      "host-exited",
      "readiness-layer-passed",
      "endpoint-published",
      "capacity-published",
      "draining",
      "retired",
      // Warm pool members (hosts.md "Warm pool"): started, proven and claimed by the provisioner.
      "pool-member-registered",
      "pool-member-ready",
      "pool-member-claimed",
    ],
    scaleout: ["observed", "fulfilled", "rejected", "expired", "cancelled"],
    // A runtime start takes its prefix's slot in the same atomic batch (docs/decisions.md "runtime limit").
    quota: ["runtime-slot-taken"],
    // Only the provisioner builds a tenant's worker, so only it records which version is deployed.
    worker: ["deployed"],
  },
  recovery: {
    runtime: ["suspected", "fenced", "fence-failed", "recovery-planned"],
    run: ["requeued-for-resume", "requeued-for-local-queued-recovery", "replacement-selected", "failed"],
    exec: ["paused-for-recovery"],
    forensics: ["*"],
    // A fenced runtime's replacement, asked for at the fence under admission's key (the design's recovery.md).
    scaleout: ["requested"],
  },
};

const reads: Readonly<Record<ServiceIdentity, (s: AuthScope) => string[]>> = {
  setup: () => [],
  api: (s) => [
    ...jsRead(s.eventStream),
    ...jsRead(s.heartbeatStream),
    ...outputsRead(s),
    ...stepCacheRights(s),
    // Lists a tenant's keys: the stream's subjects under a filter naming the tenant.
    `$JS.API.STREAM.INFO.${s.stepCacheStream}`,
  ],
  admission: (s) => jsRead(s.eventStream),
  capacity: (s) => [...jsRead(s.eventStream), ...jsRead(s.heartbeatStream)],
  provisioner: (s) => [...jsRead(s.eventStream), ...jsRead(s.heartbeatStream)],
  recovery: (s) => [...jsRead(s.eventStream), ...jsRead(s.heartbeatStream)],
  forensics: (s) => [...jsRead(s.eventStream), ...outputsRead(s)],
  scheduler: (s) => jsRead(s.eventStream),
  operator: (s) => [
    ...jsRead(s.eventStream),
    ...jsRead(s.heartbeatStream),
    ...jsRead(s.deadLetterStream),
    ...jsRead(s.archiveStream),
    ...outputsRead(s),
    ...stepCacheRights(s),
  ],
};

const appends = (s: AuthScope, id: ServiceIdentity): string[] =>
  Object.entries(WRITES[id]).flatMap(([agg, names]) => events(s, agg, names));

/** The rights of `id` over every scope in `scopes` (one for a deployment; default + tagged on a test server). */
export function rightsOf(id: Identity, scopes: readonly AuthScope[]): Rights {
  const inbox = `_INBOX_${id}.>`;
  if (id === "harness")
    return { publish: { allow: [">"], deny: [] }, subscribe: { allow: [">"], deny: [] }, allowResponses: true };
  if (id === KICKER) return KICK_RIGHTS;
  if (id === COMPACTOR) return compactorRights(scopes, inbox);
  if (id === "setup")
    return {
      // Setup manages streams but may not purge the event stream: only the compactor may (docs/retention.md).
      publish: { allow: ["$JS.API.>"], deny: scopes.map((s) => `$JS.API.STREAM.PURGE.${s.eventStream}`) },
      subscribe: { allow: [inbox], deny: [] },
      allowResponses: false,
    };
  if (id.startsWith("producer-")) {
    const tenant = id.slice("producer-".length);
    return {
      publish: { allow: ["$JS.API.INFO", ...scopes.map((s) => `${s.events}.run.${tenant}.*.submitted`)], deny: [] },
      subscribe: { allow: [inbox], deny: [] },
      allowResponses: false,
    };
  }
  const svc = id as ServiceIdentity;
  const pub = new Set<string>(["$JS.API.INFO"]);
  const deny = new Set<string>();
  const sub = new Set<string>([inbox]);
  let allowResponses = false;
  for (const s of scopes) {
    for (const x of [...reads[svc](s), ...appends(s, svc)]) pub.add(x);
    // Every service checks at start-up that drover's streams exist as defined (ensureStreams, /readyz).
    for (const st of [s.eventStream, s.heartbeatStream, s.deadLetterStream]) pub.add(`$JS.API.STREAM.INFO.${st}`);
    for (const x of durableDeny(s, id === "provisioner")) deny.add(x);
    if (id !== "operator") pub.add(skipAdvisory(s));
    if (SNAPSHOT_OWNERS.includes(svc)) for (const x of snapshotRights(s, svc)) pub.add(x);
    if (id === "provisioner") {
      pub.add(`$JS.API.CONSUMER.INFO.${s.eventStream}.${SCALE_OUT_DURABLE}`);
      pub.add(`$JS.API.CONSUMER.MSG.NEXT.${s.eventStream}.${SCALE_OUT_DURABLE}`);
      pub.add(`$JS.ACK.${s.eventStream}.${SCALE_OUT_DURABLE}.>`);
    }
    if (id === "capacity" || id === "forensics") {
      sub.add(`${s.control}.*.${id}.rebuild`);
      allowResponses = true;
    }
    if (id === "operator") pub.add(`${s.control}.*.*.rebuild`);
    // The forensics writer of each read-model database holds its lease (platform/lease.ts): it only
    // takes and renews its own service's leases, by conditional publish; nobody reads them.
    if (id === "forensics") pub.add(`${s.leases}.forensics.*`);
  }
  if (id === "provisioner") {
    // The auth callout for runtimes lives in the provisioner (callout.ts), and the history
    // responder that answers runtimes' reads (streams/history-responder.ts).
    sub.add("$SYS.REQ.USER.AUTH");
    for (const s of scopes) sub.add(`${s.history}.*.*.*`);
    allowResponses = true;
  }
  return {
    publish: { allow: [...pub], deny: [...deny] },
    subscribe: { allow: [...sub], deny: [] },
    allowResponses,
  };
}

function compactorRights(scopes: readonly AuthScope[], inbox: string): Rights {
  const pub = new Set<string>(["$JS.API.INFO"]);
  const deny = new Set<string>();
  for (const s of scopes) {
    for (const x of [...jsRead(s.eventStream), ...jsRead(s.archiveStream)]) pub.add(x);
    pub.add(`$JS.API.STREAM.PURGE.${s.eventStream}`);
    pub.add(`${s.archive}.>`);
    for (const x of durableDeny(s, false)) deny.add(x);
  }
  return {
    publish: { allow: [...pub], deny: [...deny] },
    subscribe: { allow: [inbox], deny: [] },
    allowResponses: false,
  };
}
