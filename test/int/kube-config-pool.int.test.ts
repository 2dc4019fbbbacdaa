import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiFailure } from "../../platform/hosts/kubernetes/api-errors.ts";
import { PooledKubeConfig } from "../../platform/hosts/kubernetes/kube-config.ts";
import { unreadAnswer } from "../../platform/hosts/kubernetes/unread-answer.ts";
import { generateTls } from "../../platform/nats-auth/tls.ts";

/**
 * The TLS connections a KubeConfig opens to an API server endpoint (a local HTTPS server with a
 * certificate of a private CA, answering a Pod list and a one-event watch; what is measured is the
 * client's transport, not Kubernetes behaviour, which the k8s tier covers on the real node).
 * @kubernetes/client-node builds a new https.Agent per request, so every call is a new TCP
 * connection and a full TLS handshake; PooledKubeConfig keeps one keep-alive agent for calls and
 * watches alike.
 */
let dir = "";
let server: Server;
let url = "";
let caData = "";
let handshakes = 0;
const requests: string[] = [];
const bodies: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "drover-kc-pool-"));
  const tls = await generateTls(dir, ["127.0.0.1"]);
  caData = (await readFile(tls.caFile)).toString("base64");
  server = createServer({ cert: await readFile(tls.certFile), key: await readFile(tls.keyFile) }, (req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
    res.setHeader("content-type", "application/json");
    if (req.method === "PATCH" || req.method === "DELETE") {
      // The whole request is read before answering (a kept-alive connection must be left clean).
      const parts: Buffer[] = [];
      req.on("data", (c: Buffer) => parts.push(c));
      req.on("end", () => {
        bodies.push(`${req.headers["content-type"]} ${Buffer.concat(parts).toString()}`);
        if (req.url?.endsWith("/gone")) {
          res.statusCode = 404;
          res.end(
            JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 }),
          );
          return;
        }
        const pod = {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p", uid: "u1", creationTimestamp: "2026-12-06T20:00:00Z" },
        };
        res.end(JSON.stringify({ ...pod, status: { phase: "Running", startTime: "2026-12-06T20:00:01Z" } }));
      });
      return;
    }
    if (req.url?.includes("watch=true")) {
      const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "p", uid: "u1", resourceVersion: "2" } };
      res.end(`${JSON.stringify({ type: "DELETED", object: pod })}\n`);
      return;
    }
    res.end(JSON.stringify({ apiVersion: "v1", kind: "PodList", metadata: { resourceVersion: "1" }, items: [] }));
  });
  server.on("secureConnection", () => handshakes++);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
  await rm(dir, { recursive: true, force: true });
});

function configure<K extends KubeConfig>(kc: K): K {
  kc.loadFromOptions({
    clusters: [{ name: "c", server: url, caData }],
    users: [{ name: "u", token: "t0ken" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

async function handshakesFor(kc: KubeConfig, calls: number): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  const before = handshakes;
  for (let i = 0; i < calls; i++) await core.listNamespacedPod({ namespace: "ns" });
  return handshakes - before;
}

describe("PooledKubeConfig", () => {
  it("sends every call over one kept-alive TLS connection, with the same credentials, where a KubeConfig opens one per call", async () => {
    expect(await handshakesFor(configure(new KubeConfig()), 4)).toBe(4);
    requests.length = 0;
    expect(await handshakesFor(configure(new PooledKubeConfig()), 4)).toBe(1);
    expect(requests).toEqual(Array(4).fill("GET /api/v1/namespaces/ns/pods Bearer t0ken"));
  });

  it("serves watches from the same pool, and the calls after a watch reuse its connection", async () => {
    const kc = configure(new PooledKubeConfig());
    const before = handshakes;
    const events: string[] = [];
    await new Promise<void>((done, fail) => {
      void new Watch(kc)
        .watch(
          "/api/v1/namespaces/ns/pods",
          { fieldSelector: "metadata.name=p" },
          (type, obj: { metadata: { uid: string } }) => {
            events.push(`${type} ${obj.metadata.uid}`);
          },
          (err) => (err ? fail(err as Error) : done()),
        )
        .catch(fail);
    });
    expect(events).toEqual(["DELETED u1"]);
    await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: "ns" });
    expect(handshakes - before).toBe(1);
  });
});

/**
 * unread-answer.ts: a call whose answer its caller never reads (the bind's annotation patch, the
 * kill's deletes) is not turned into a typed Pod; its connection still goes back to the pool, and an
 * error answer still reaches the caller whole.
 */
describe("unreadAnswer", () => {
  const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
  const patch = (core: CoreV1Api, options: typeof mergePatch) =>
    core.patchNamespacedPod({ namespace: "ns", name: "p", body: { metadata: { uid: "u1" } } }, options);

  it("resolves a successful call without deserializing the answer, sends the request unchanged, and reuses the connection", async () => {
    const core = configure(new PooledKubeConfig()).makeApiClient(CoreV1Api);
    // Without it, the library builds the typed Pod (dates included) from the answer.
    const typed = await patch(core, mergePatch);
    expect(typed.metadata?.creationTimestamp).toBeInstanceOf(Date);
    bodies.length = 0;
    const before = handshakes;
    for (let i = 0; i < 3; i++) expect(await patch(core, unreadAnswer(mergePatch))).toEqual({});
    expect(handshakes - before).toBe(0);
    expect(bodies).toEqual(Array(3).fill('application/merge-patch+json {"metadata":{"uid":"u1"}}'));
    await core.deleteNamespacedPod(
      { namespace: "ns", name: "p", body: { preconditions: { uid: "u1" } } },
      unreadAnswer(),
    );
    expect(handshakes - before).toBe(0);
  });

  it("leaves an error answer whole: the caller still reads its code and reason", async () => {
    const core = configure(new PooledKubeConfig()).makeApiClient(CoreV1Api);
    const failed = await core
      .deleteNamespacedPod({ namespace: "ns", name: "gone", body: { preconditions: { uid: "u1" } } }, unreadAnswer())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(apiFailure(failed)).toMatchObject({ code: 404, reason: "NotFound" });
  });
});
