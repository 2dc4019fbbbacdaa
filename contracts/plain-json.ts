/**
 * Whether `v` is a JSON value that zod's `z.json()` accepts and parses to an equal value: null, a
 * string, a boolean, a finite number, or an array or plain object of such values. Conservative:
 * anything unusual (another prototype, a hole, a symbol, non-enumerable or `__proto__` key, more than
 * MAX_DEPTH levels) answers false and the caller lets zod decide. Every value JSON.parse returns
 * within MAX_DEPTH levels answers true, but for one holding an own `__proto__` key (JSON.parse makes
 * one from `"__proto__"`): that one goes to zod. `contracts/plain-json.unit.test.ts` holds it to zod.
 */
export function isPlainJson(v: unknown, depth = 0): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (typeof v !== "object" || depth >= MAX_DEPTH) return false;
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) return false;
    for (let i = 0; i < v.length; i++) if (!(i in v) || !isPlainJson(v[i], depth + 1)) return false;
    return true;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype || Object.getOwnPropertySymbols(v).length > 0) return false;
  const keys = Object.keys(v);
  if (keys.length !== Object.getOwnPropertyNames(v).length) return false;
  for (const k of keys)
    if (k === "__proto__" || !isPlainJson((v as Record<string, unknown>)[k], depth + 1)) return false;
  return true;
}

const MAX_DEPTH = 64;
