import { readFileSync } from "node:fs";
import { DroverError } from "../../../contracts/index.ts";

/**
 * The tenant's secrets as this runtime resolves them (docs/sdk.md "Secrets"): a JSON file of
 * `{ "name": "value" }` (DROVER_SECRETS_FILE, read at each resolution so a rotated file applies to
 * the next step) and values the provisioner handed over from its environment (DROVER_SECRETS_JSON,
 * read once and removed from this process's environment). A value is never written to an event, a
 * log line or an output: `redact` blanks every value resolved so far out of any text.
 */
export interface SecretResolver {
  /** The secret's value; throws `secret-unavailable` (naming the secret, never a value) when absent. */
  get(name: string): string;
  /** `text` with every secret value this process resolved replaced by `[secret]`. */
  redact(text: string): string;
  /** True when `text` contains a value this process resolved. */
  leaks(text: string): boolean;
}

export function createSecretResolver(file: string | undefined, handedOver: string | undefined): SecretResolver {
  const fromEnv = parseMap(handedOver, "DROVER_SECRETS_JSON");
  const used = new Set<string>();
  const fromFile = (): Record<string, string> => {
    if (!file) return {};
    try {
      return parseMap(readFileSync(file, "utf8"), file);
    } catch (e) {
      throw new DroverError("secret-unavailable", `the tenant's secret file cannot be read: ${(e as Error).message}`);
    }
  };
  return {
    get(name) {
      const value = fromFile()[name] ?? fromEnv[name];
      if (value === undefined)
        throw new DroverError("secret-unavailable", `secret "${name}" is not in the tenant's source`);
      // Very short values would redact ordinary text; they are still never written by drover itself.
      if (value.length >= 4) used.add(value);
      return value;
    },
    redact(text) {
      let out = text;
      for (const v of used) out = out.split(v).join("[secret]");
      return out;
    },
    leaks(text) {
      for (const v of used) if (text.includes(v)) return true;
      return false;
    },
  };
}

function parseMap(text: string | undefined, where: string): Record<string, string> {
  if (!text) return {};
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new Error(`${where} is not a JSON object of secret name → value`);
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
}
