import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PooledKubeConfig } from "../../platform/hosts/kubernetes/kube-config.ts";
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

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "drover-kc-pool-"));
  const tls = await generateTls(dir, ["127.0.0.1"]);
  caData = (await readFile(tls.caFile)).toString("base64");
  server = createServer({ cert: await readFile(tls.certFile), key: await readFile(tls.keyFile) }, (req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
    res.setHeader("content-type", "application/json");
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
