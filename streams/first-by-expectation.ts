/** Header access as JetStream messages offer it (a plain interface keeps this pure and testable). */
export interface HeaderReader {
  get(name: string): string;
}

/**
 * Whether the server stored this `submitted` (on `subject`, `<prefix>.run.<tenant>.<run>.submitted`)
 * only after checking it was the run's first: it carries `Nats-Expected-Last-Subject-Sequence: 0`
 * over a subject filter that covers its own subject (none: the subject itself; or the run's `.*`
 * or `.>`, docs/producers.md). The API, the scheduler and admission always append so; a producer
 * should. Anything else may be a late duplicate of an earlier submission (pure). The API's queue
 * count and admission's run index both trust it, so a run first seen after they dropped closed runs
 * needs no log read to be known as new.
 */
export function firstByExpectation(headers: HeaderReader | undefined, subject: string): boolean {
  if (!headers || headers.get("Nats-Expected-Last-Subject-Sequence") !== "0") return false;
  const scope = headers.get("Nats-Expected-Last-Subject-Sequence-Subject");
  const run = subject.slice(0, subject.lastIndexOf("."));
  return scope === "" || scope === subject || scope === `${run}.*` || scope === `${run}.>`;
}
