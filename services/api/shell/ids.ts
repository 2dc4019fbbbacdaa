/** The API's run ids: shared with every party that submits runs (platform/submission-ids.ts). */
export {
  randomIdGenerator,
  submissionIds,
  type IdGenerator,
  type SubmissionIds,
} from "../../../platform/submission-ids.ts";
