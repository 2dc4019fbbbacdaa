/**
 * A predicate for `?types=run.*,exec.step-completed`: an exact event type, or `<aggregate>.*` for
 * every event of that aggregate. No list (or an empty one) keeps everything. Pure.
 */
export function typeFilter(types: string | undefined): (type: string) => boolean {
  const wanted = (types ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  if (wanted.length === 0) return () => true;
  const exact = new Set(wanted.filter((t) => !t.endsWith(".*")));
  const prefixes = wanted.filter((t) => t.endsWith(".*")).map((t) => t.slice(0, -1));
  return (type) => exact.has(type) || prefixes.some((p) => type.startsWith(p));
}
