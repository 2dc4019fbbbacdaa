import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "./errors.ts";

/** A structured reason: a catalogued code plus a human detail. */
export const ReasonCode = z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]);
export const Reason = z.object({ code: ReasonCode, detail: z.string().max(2000).default("") }).strict();
export type Reason = z.infer<typeof Reason>;
