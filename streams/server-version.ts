import { DroverError } from "../contracts/index.ts";

/** The oldest nats-server drover runs on: atomic batch publish (ADR-50) arrived in 2.12. */
export const MIN_SERVER_VERSION = "2.12.0";

interface Version {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  readonly pre: string;
}

/**
 * Parses `major.minor.patch[-prerelease][+build]`, the form nats-server reports in INFO.
 * Returns undefined for anything else, so callers refuse rather than guess.
 */
export function parseServerVersion(v: string): Version | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(v.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), pre: m[4] ?? "" };
}

/**
 * Semver ordering of two versions: negative when a < b, 0 when equal, positive when a > b.
 * A prerelease sorts before its release (2.12.0-RC.1 < 2.12.0), as semver says; prereleases
 * compare by string, enough to order the RC tags nats-server uses.
 * Throws on an unparsable version.
 */
export function compareVersions(a: string, b: string): number {
  const pa = parseServerVersion(a),
    pb = parseServerVersion(b);
  if (!pa || !pb) throw new Error(`cannot compare versions ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
  const d = pa.major - pb.major || pa.minor - pb.minor || pa.patch - pb.patch;
  if (d !== 0) return d;
  if (pa.pre === pb.pre) return 0;
  if (pa.pre === "") return 1;
  if (pb.pre === "") return -1;
  return pa.pre < pb.pre ? -1 : 1;
}

/**
 * Refuses a server older than {@link MIN_SERVER_VERSION}. Older servers silently drop
 * `allow_atomic` and store a "batch" message by message (infra-notes §1.4 pitfall 4), and ignore
 * the wildcard OCC header before 2.11, so running on them would break atomicity and fencing
 * without any error. Throws `server-version-unsupported` when the version is older, missing or
 * unparsable.
 */
export function assertServerVersion(version: string | undefined): void {
  const ok =
    version !== undefined &&
    parseServerVersion(version) !== undefined &&
    compareVersions(version, MIN_SERVER_VERSION) >= 0;
  if (!ok) {
    throw new DroverError(
      "server-version-unsupported",
      `nats-server ${version ?? "(unknown version)"} is not supported: drover needs nats-server >= ${MIN_SERVER_VERSION} ` +
        "(atomic batch publish and wildcard subject-sequence expectations); upgrade the server (scripts/install-tools.sh pins one)",
      { details: { version: version ?? null, minimum: MIN_SERVER_VERSION } },
    );
  }
}
