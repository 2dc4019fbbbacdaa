import { randomBytes } from "node:crypto";

/** A fresh lowercase, subject-safe name for per-test isolation of streams, databases and key prefixes. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString("hex")}`;
}
