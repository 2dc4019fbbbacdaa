/**
 * A tenant worker whose `crash` step kills its own runtime process (SIGKILL): the step that brings
 * its host down on every attempt, for the crash-loop test (test/e2e/crash-loop.e2e.test.ts).
 */
import { defineWorker } from "drover/sdk";

export default defineWorker({
  steps: {
    crash: async () => {
      process.kill(process.pid, "SIGKILL");
      await new Promise((r) => setTimeout(r, 60_000));
      return null;
    },
  },
});
