import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Where a generated CA and nats-server certificate live (PEM). */
export interface TlsFiles {
  /** The CA certificate clients trust (NATS_CA_FILE). */
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/**
 * Generates (once per directory) a private CA and a nats-server certificate signed by it, valid for
 * `names` (IP addresses and DNS names, e.g. `127.0.0.1`, `localhost`, `nats.drover-deps.svc`), with
 * Debian's `openssl` (node's crypto cannot issue X.509 certificates). Keys are EC P-256, written
 * mode 0600; the certificates last 825 days. An existing set in `dir` is reused as it is.
 * Failure modes: rejects when openssl is missing or fails (its stderr in the message).
 */
export async function generateTls(dir: string, names: readonly string[]): Promise<TlsFiles> {
  const files: TlsFiles = {
    caFile: join(dir, "ca.pem"),
    certFile: join(dir, "server.pem"),
    keyFile: join(dir, "server-key.pem"),
  };
  if (Object.values(files).every((f) => existsSync(f))) return files;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caKey = join(dir, "ca-key.pem");
  const csr = join(dir, "server.csr");
  const ext = join(dir, "server.ext");
  const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(",");
  const openssl = async (...args: string[]) => {
    try {
      await run("openssl", args, { env: { ...process.env, OPENSSL_CONF: "/dev/null" } });
    } catch (e) {
      throw new Error(`openssl ${args[0]} failed: ${(e as { stderr?: string }).stderr ?? (e as Error).message}`, {
        cause: e,
      });
    }
  };
  const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl(
    "req",
    "-x509",
    ...ecKey,
    "-keyout",
    caKey,
    "-out",
    files.caFile,
    "-days",
    "825",
    "-subj",
    "/CN=drover NATS CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  await openssl("req", "-new", ...ecKey, "-keyout", files.keyFile, "-out", csr, "-subj", "/CN=nats-server");
  await writeFile(
    ext,
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`,
  );
  await openssl(
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    files.caFile,
    "-CAkey",
    caKey,
    "-CAcreateserial",
    "-out",
    files.certFile,
    "-days",
    "825",
    "-extfile",
    ext,
  );
  return files;
}
