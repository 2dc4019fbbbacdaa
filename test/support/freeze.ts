/**
 * SIGSTOP / SIGCONT of a server process: its connections stay open and its requests time out, as a
 * JetStream that does not answer. `thaw` is idempotent (call it in afterEach).
 */
export function freezer(pid: () => number): { freeze(): void; thaw(): void } {
  let frozen = false;
  return {
    freeze() {
      process.kill(pid(), "SIGSTOP");
      frozen = true;
    },
    thaw() {
      if (frozen) process.kill(pid(), "SIGCONT");
      frozen = false;
    },
  };
}
