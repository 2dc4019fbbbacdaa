/** Bytes of a value's JSON text (UTF-8): what the size limits of inputs and outputs count. */
export const canonicalSize = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value) ?? "").length;

/** Largest run input, in bytes of canonical JSON (a child run's input too, journaled by its run step). */
export const RUN_INPUT_MAX_BYTES = 64 * 1024;
