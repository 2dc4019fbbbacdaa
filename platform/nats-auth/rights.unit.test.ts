import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT } from "../../streams/index.ts";
import { generateKeys } from "./credentials.ts";
import {
  COMPACTOR,
  eventOf,
  KICKER,
  producerIdentity,
  scopeOf,
  SERVICE_IDENTITIES,
  SNAPSHOT_OWNERS,
} from "./rights.ts";
import { runtimeRights } from "./runtime-rights.ts";
import { authConfig } from "./server-config.ts";

const doc = readFileSync(resolve(import.meta.dirname, "../../docs/nats-identities.md"), "utf8");
const table = doc.slice(doc.indexOf("<!-- identity-table:start -->"), doc.indexOf("<!-- identity-table:end -->"));
const rows = new Map(
  table
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("| identity") && !l.startsWith("| ---"))
    .map((l) => l.split("|").map((c) => c.trim()))
    .map((c) => [c[1]!, { appends: c[2]!, reads: c[3]!, other: c[4]! }] as const),
);
const scope = scopeOf(DEFAULT_LAYOUT);
const streamOf: Record<string, string> = {
  DROVER: "DROVER",
  HEARTBEATS: "HEARTBEATS",
  DROVER_DLQ: "DROVER_DLQ",
  outputs: scope.outputsStream,
  DROVER_ARCHIVE: scope.archiveStream,
  "own snapshot": scope.snapshotStream,
  DROVER_STEP_CACHE: scope.stepCacheStream,
};
const appendsOf = (cell: string): string[] =>
  cell === "—"
    ? []
    : cell
        .split(",")
        .map((t) => t.trim().split(".") as [string, string])
        .map(([a, n]) => eventOf(scope, a, n));

type User = {
  nkey: string;
  permissions: { publish: { allow: string[]; deny?: string[] }; subscribe: { allow: string[] } };
};

describe("the generated nats-server configuration matches docs/nats-identities.md (pure: proves no transport)", () => {
  const keys = generateKeys({ producers: ["acme"] });
  const conf = authConfig(keys, [scope]) as {
    accounts: { DROVER: { users: User[] }; SYS: { users: User[] } };
    system_account: string;
    authorization: { auth_callout: { auth_users: string[] } };
  };
  const userOf = (id: string): User => conf.accounts.DROVER.users.find((u) => u.nkey === keys.publicKeys[id as never])!;
  const eventSubjects = (u: User) => u.permissions.publish.allow.filter((s) => s.startsWith(`${scope.events}.`)).sort();

  it.each(SERVICE_IDENTITIES.filter((i) => i !== "setup"))(
    "%s appends exactly its row's events and reads exactly its streams",
    (id) => {
      const row = rows.get(id)!;
      expect(row, `docs row for ${id}`).toBeDefined();
      const u = userOf(id);
      expect(eventSubjects(u)).toEqual(appendsOf(row.appends).sort());
      const read = row.reads === "—" ? [] : row.reads.split(",").map((r) => streamOf[r.trim()]!);
      // The streams it may read: those it may Direct Get from (by body, or by subject for outputs).
      const infos = new Set(
        u.permissions.publish.allow
          .filter((s) => s.startsWith("$JS.API.DIRECT.GET."))
          .map((s) => s.slice("$JS.API.DIRECT.GET.".length).split(".")[0]!),
      );
      expect([...infos].sort()).toEqual(read.sort());
      expect(
        u.permissions.publish.allow.some((s) => /^\$JS\.API\.(STREAM\.(CREATE|UPDATE|DELETE|PURGE)|>)/.test(s)),
      ).toBe(false);
      expect(u.permissions.publish.deny).toContain("$JS.API.CONSUMER.DURABLE.CREATE.>");
      // Consumers on drover's streams only by the unnamed create, where the server refuses a durable.
      const named = ["DROVER", "HEARTBEATS", "DROVER_DLQ"].map((st) => `$JS.API.CONSUMER.CREATE.${st}.`);
      expect(u.permissions.publish.allow.filter((x) => named.some((n) => x.startsWith(n)))).toEqual([]);
      // Outputs are read chunk by chunk by the subject-form Direct Get: no consumer right there at all.
      const onOutputs = (x: string) => x.startsWith("$JS.API.CONSUMER.") && x.includes(`.${scope.outputsStream}`);
      expect(u.permissions.publish.allow.filter(onOutputs)).toEqual([]);
    },
  );

  it.each(SERVICE_IDENTITIES.filter((i) => i !== "setup"))(
    "%s writes and reads only its own snapshot key, by subject, and no consumer on the snapshot stream",
    (id) => {
      const u = userOf(id);
      const onSnap = u.permissions.publish.allow.filter(
        (x) => x.startsWith(`${scope.snapshots}.`) || x.includes(`.${scope.snapshotStream}`),
      );
      const own = SNAPSHOT_OWNERS.includes(id);
      expect(onSnap.sort()).toEqual(
        own
          ? [`$JS.API.DIRECT.GET.${scope.snapshotStream}.${scope.snapshots}.${id}.>`, `${scope.snapshots}.${id}.>`]
          : [],
      );
      expect(rows.get(id)!.reads.includes("own snapshot")).toBe(own);
      if (own) expect(rows.get(id)!.other).toContain(`\`${scope.snapshots}.${id}.>\``);
    },
  );

  it("only setup manages streams and consumers", () => {
    expect(rows.get("setup")!.other).toContain("$JS.API.>");
    expect(userOf("setup").permissions.publish.allow).toEqual(["$JS.API.>"]);
  });

  it("only the compactor may purge the event stream: setup is denied it, and the compactor appends nothing and manages nothing", () => {
    expect(userOf("setup").permissions.publish.deny).toEqual([`$JS.API.STREAM.PURGE.${scope.eventStream}`]);
    expect(rows.get("setup")!.other).toContain(`\`$JS.API.STREAM.PURGE.DROVER\` denied`);
    const u = userOf(COMPACTOR);
    const row = rows.get(COMPACTOR)!;
    expect([row.appends, row.reads]).toEqual(["—", "DROVER, DROVER_ARCHIVE"]);
    expect(eventSubjects(u)).toEqual([]);
    const allow = u.permissions.publish.allow;
    expect(allow.filter((x) => /^\$JS\.API\.STREAM\.(CREATE|UPDATE|DELETE|PURGE|MSG\.DELETE)/.test(x))).toEqual([
      `$JS.API.STREAM.PURGE.${scope.eventStream}`,
    ]);
    expect(allow).toContain(`${scope.archive}.>`);
    for (const s of [`$JS.API.STREAM.PURGE.${scope.eventStream}`, `${scope.archive}.>`])
      expect(row.other).toContain(`\`${s}\``);
    expect(u.permissions.publish.deny).toContain("$JS.API.CONSUMER.DURABLE.CREATE.>");
    // Nobody else holds a purge right on drover's streams.
    for (const id of SERVICE_IDENTITIES.filter((i) => i !== "setup"))
      expect(
        userOf(id).permissions.publish.allow.filter((x) => x.includes("STREAM.PURGE")),
        id,
      ).toEqual([]);
  });

  it("the kicker is the system account's only user and may only list connections, kick one and hear the DROVER account's disconnects", () => {
    expect(conf.system_account).toBe("SYS");
    expect(conf.accounts.SYS.users.map((u) => u.nkey)).toEqual([keys.publicKeys[KICKER]]);
    expect(conf.accounts.DROVER.users.some((u) => u.nkey === keys.publicKeys[KICKER])).toBe(false);
    // A configured user: the auth callout (runtimes) is not asked about it.
    expect(conf.authorization.auth_callout.auth_users).toContain(keys.publicKeys[KICKER]);
    const [u] = conf.accounts.SYS.users;
    expect(u!.permissions.publish.allow.sort()).toEqual(["$SYS.REQ.SERVER.*.KICK", "$SYS.REQ.SERVER.PING.CONNZ"]);
    expect(u!.permissions.subscribe.allow).toEqual(["_INBOX_kicker.>", "$SYS.ACCOUNT.DROVER.DISCONNECT"]);
    const row = rows.get(KICKER)!;
    expect([row.appends, row.reads]).toEqual(["—", "—"]);
    for (const s of [...u!.permissions.publish.allow, "$SYS.ACCOUNT.DROVER.DISCONNECT"])
      expect(row.other).toContain(`\`${s}\``);
  });

  it("only the api may append run.upgraded (a run's move to a newer worker version): no other service, producer or runtime", () => {
    /** Whether NATS subject pattern `p` (with * and >) matches `subject`. */
    const matches = (p: string, subject: string) => {
      const a = p.split(".");
      const b = subject.split(".");
      for (let i = 0; i < a.length; i++) {
        if (a[i] === ">") return b.length > i;
        if (i >= b.length || (a[i] !== "*" && a[i] !== b[i])) return false;
      }
      return a.length === b.length;
    };
    const upgraded = `${scope.events}.run.acme.r1.upgraded`;
    const may = (allow: readonly string[]) => allow.some((p) => matches(p, upgraded));
    const writers = [...SERVICE_IDENTITIES.filter((i) => i !== "setup"), COMPACTOR, producerIdentity("acme")].filter(
      (id) => may(userOf(id).permissions.publish.allow),
    );
    expect(writers).toEqual(["api"]);
    expect(may(runtimeRights(scope, "rt-1", ["acme"]).publish.allow)).toBe(false);
    expect(may(runtimeRights(scope, "rt-1", ["*"]).publish.allow)).toBe(false);
    expect(rows.get("api")!.appends).toContain("run.upgraded");
  });

  it("only the provisioner may append worker.deployed and only the api worker.deploy-requested (a tenant's deploys): no other service, producer or runtime", () => {
    const matches = (p: string, subject: string) => {
      const a = p.split(".");
      const b = subject.split(".");
      for (let i = 0; i < a.length; i++) {
        if (a[i] === ">") return b.length > i;
        if (i >= b.length || (a[i] !== "*" && a[i] !== b[i])) return false;
      }
      return a.length === b.length;
    };
    const writersOf = (subject: string) => {
      const may = (allow: readonly string[]) => allow.some((p) => matches(p, subject));
      expect(may(runtimeRights(scope, "rt-1", ["acme"]).publish.allow)).toBe(false);
      expect(may(runtimeRights(scope, "rt-1", ["*"]).publish.allow)).toBe(false);
      return [...SERVICE_IDENTITIES.filter((i) => i !== "setup"), COMPACTOR, producerIdentity("acme")].filter((id) =>
        may(userOf(id).permissions.publish.allow),
      );
    };
    expect(writersOf(`${scope.events}.worker.acme.deploys.deployed`)).toEqual(["provisioner"]);
    expect(writersOf(`${scope.events}.worker.acme.deploys.deploy-requested`)).toEqual(["api"]);
    expect(rows.get("provisioner")!.appends).toContain("worker.deployed");
    expect(rows.get("api")!.appends).toContain("worker.deploy-requested");
  });

  it("only the api and the operator write step cache keys (besides runtimes, their tenants'), by subject, with no consumer there", () => {
    const onCache = (id: string) =>
      userOf(id).permissions.publish.allow.filter(
        (x) => x.startsWith(`${scope.stepCache}.`) || x.includes(`.${scope.stepCacheStream}`),
      );
    for (const id of SERVICE_IDENTITIES.filter((i) => i !== "setup"))
      expect([id, onCache(id).sort()]).toEqual([
        id,
        id === "api"
          ? [
              `$JS.API.DIRECT.GET.${scope.stepCacheStream}.${scope.stepCache}.*.*`,
              `$JS.API.STREAM.INFO.${scope.stepCacheStream}`,
              `${scope.stepCache}.*.*`,
            ]
          : id === "operator"
            ? [`$JS.API.DIRECT.GET.${scope.stepCacheStream}.${scope.stepCache}.*.*`, `${scope.stepCache}.*.*`]
            : [],
      ]);
    for (const id of ["api", "operator"]) expect(rows.get(id)!.other).toContain("`drover-cache.<tenant>.<key>`");
  });

  it("only the provisioner answers runtimes' history requests (the responder), and only runtimes ask", () => {
    const onHistory = (id: string) =>
      [...userOf(id).permissions.publish.allow, ...userOf(id).permissions.subscribe.allow].filter((x) =>
        x.startsWith(`${scope.history}.`),
      );
    for (const id of SERVICE_IDENTITIES.filter((i) => i !== "setup"))
      expect([id, onHistory(id)]).toEqual([id, id === "provisioner" ? [`${scope.history}.*.*.*`] : []]);
    expect(userOf("provisioner").permissions.subscribe.allow).toContain(`${scope.history}.*.*.*`);
    expect(rows.get("provisioner")!.other).toContain("`drover-read.{exec,run}.<tenant>.<id>`");
  });

  it("a producer submits only its tenant's runs", () => {
    expect(eventSubjects(userOf(producerIdentity("acme")))).toEqual([`${scope.events}.run.acme.*.submitted`]);
  });

  it("a runtime appends only its tenants' journal, run outcome and its own heartbeat (no run.submitted or run.cancel-requested: admission submits child runs), and manages nothing", () => {
    const r = runtimeRights(scope, "rt-1", ["acme"]);
    const events = r.publish.allow.filter((s) => s.startsWith(`${scope.events}.`)).sort();
    expect(events).toEqual(
      [
        `${scope.events}.exec.acme.*.*`,
        ...["started", "completed", "failed", "cancelled"].map((n) => `${scope.events}.run.acme.*.${n}`),
      ].sort(),
    );
    expect(r.publish.allow.filter((s) => s.startsWith(`${scope.heartbeats}.`))).toEqual([`${scope.heartbeats}.rt-1`]);
    expect(
      r.publish.allow.some((s) => /^\$JS\.API\.(STREAM\.(CREATE|UPDATE|DELETE|PURGE)|CONSUMER\.DURABLE|>)/.test(s)),
    ).toBe(false);
    // No consumer of any kind (issue 13): its histories come from the provisioner's history responder,
    // asked on a subject naming the aggregate, for its tenants' exec and run aggregates only.
    expect(r.publish.allow.filter((s) => s.startsWith("$JS.API.CONSUMER."))).toEqual([]);
    expect(r.publish.deny).toContain("$JS.API.CONSUMER.>");
    expect(r.publish.allow.filter((s) => s.startsWith(`${scope.history}.`)).sort()).toEqual([
      `${scope.history}.exec.acme.*`,
      `${scope.history}.run.acme.*`,
    ]);
    // It subscribes to its inbox and its tenants' signals (the waits' feed), nothing else.
    expect([...r.subscribe.allow].sort()).toEqual(
      ["_INBOX_rt-1.>", `${scope.events}.run.acme.*.signal-received`].sort(),
    );
    const row = rows.get("runtime &lt;id&gt;")!;
    expect(row.other).toContain("no consumer");
    expect(row.other).toContain("`drover-read.{exec,run}.<tenant>.<id>`");
    // Outputs: only its tenants', written and read by subject (platform/output-store.ts).
    expect(r.publish.allow.filter((s) => s.startsWith(`${scope.outputs}.`))).toEqual([`${scope.outputs}.acme.*.*`]);
    expect(r.publish.allow.filter((s) => s.startsWith(`$JS.API.DIRECT.GET.${scope.outputsStream}`))).toEqual([
      `$JS.API.DIRECT.GET.${scope.outputsStream}.${scope.outputs}.acme.>`,
    ]);
    expect(r.publish.allow).not.toContain(`$JS.API.STREAM.MSG.GET.${scope.outputsStream}`);
    expect(r.publish.allow.filter((x) => x.includes(`.${scope.outputsStream}.`) && x.includes("CONSUMER"))).toEqual([]);
    // Step cache keys: only its tenants', written and read by subject (platform/step-cache-store.ts).
    expect(r.publish.allow.filter((s) => s.startsWith(`${scope.stepCache}.`))).toEqual([`${scope.stepCache}.acme.*`]);
    expect(r.publish.allow.filter((s) => s.startsWith(`$JS.API.DIRECT.GET.${scope.stepCacheStream}`))).toEqual([
      `$JS.API.DIRECT.GET.${scope.stepCacheStream}.${scope.stepCache}.acme.*`,
    ]);
    // Reads of the event stream only name their subject in the request subject: no get by sequence
    // or with a filter in the body, so it reads only its tenants' exec and run events.
    const eventReads = r.publish.allow.filter((s) =>
      [`$JS.API.DIRECT.GET.${scope.eventStream}`, `$JS.API.STREAM.MSG.GET.${scope.eventStream}`].some(
        (p) => s === p || s.startsWith(`${p}.`),
      ),
    );
    expect(eventReads.sort()).toEqual(
      [
        `$JS.API.DIRECT.GET.${scope.eventStream}.${scope.events}.exec.acme.>`,
        `$JS.API.DIRECT.GET.${scope.eventStream}.${scope.events}.run.acme.>`,
      ].sort(),
    );
    expect(r.publish.deny).toContain(`${scope.events}.exec.*.*.paused-for-recovery`);
    expect(rows.get("runtime &lt;id&gt;")!.appends).toContain("exec.* but exec.paused-for-recovery");
    expect(rows.get("runtime &lt;id&gt;")!.appends).not.toMatch(/run\.submitted|run\.cancel-requested/);
  });
});
