import type { apiClient } from "../../platform/api-client.ts";
import { eventually } from "./streams.ts";

type Api = ReturnType<typeof apiClient>;

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
  );
