import type { apiClient } from "../../platform/api-client.ts";
import { eventually } from "./streams.ts";

type Api = ReturnType<typeof apiClient>;

/**
 * Every 200 ms, not eventually's 25: tests await 5–25 runs at once, and 25 pollers every 25 ms are up
 * to 1 000 API requests a second on 2 cores, competing with the services under test (the
 * worker-versions e2e used ~20 % more CPU with them). Runs awaited together are seen ≤ 200 ms late.
 */
const POLL_MS = 200;

/**
 * The run's view once it completed (`GET /v1/runs/:id` through the real API); a run that ends any
 * other way (failed, rejected, cancelled) fails the wait at once, naming its status.
 */
export const runCompleted = (api: () => Api, id: string, timeoutMs: number) =>
  eventually(
    `run ${id} completed`,
    async () => {
      const r = await api().run(id);
      if (["failed", "rejected", "cancelled"].includes(r.body?.status)) throw new Error(`${id}: ${r.body.status}`);
      return r.body?.status === "completed" ? r.body : undefined;
    },
    timeoutMs,
    POLL_MS,
  );
