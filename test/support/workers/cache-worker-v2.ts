/** Version 2 of the step cache host test worker: cache-worker.ts's steps from another module file, answering `by: "v2"`. */
import { priceWorker } from "./cache-worker.ts";

export default priceWorker("v2");
