/**
 * The first place two JSON values differ, as a path and both sides (each cut to `max` characters),
 * or undefined when they are equal. Object keys are compared in sorted order, arrays by index.
 */
export function firstDifference(a: unknown, b: unknown, path = "$", max = 300): string | undefined {
  if (Object.is(a, b)) return undefined;
  const show = (x: unknown) => {
    const s = JSON.stringify(x) ?? String(x);
    return s.length > max ? `${s.slice(0, max)}…` : s;
  };
  if (
    typeof a !== "object" ||
    typeof b !== "object" ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  ) {
    return `${path}: ${show(a)} ≠ ${show(b)}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d =
        i < a.length && i < b.length
          ? firstDifference(a[i], b[i], `${path}[${i}]`, max)
          : `${path}[${i}]: ${i < a.length ? show(a[i]) : "missing"} ≠ ${i < b.length ? show(b[i]) : "missing"}`;
      if (d) return `${d} (lengths ${a.length}/${b.length})`;
    }
    return undefined;
  }
  const ra = a as Record<string, unknown>,
    rb = b as Record<string, unknown>;
  for (const k of [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort()) {
    if (!(k in ra) || !(k in rb))
      return `${path}.${k}: ${k in ra ? show(ra[k]) : "missing"} ≠ ${k in rb ? show(rb[k]) : "missing"}`;
    const d = firstDifference(ra[k], rb[k], `${path}.${k}`, max);
    if (d) return d;
  }
  return undefined;
}
