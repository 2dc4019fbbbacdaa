/** Bytes of a value's JSON text (UTF-8): what the size limits of inputs and outputs count. */
export const canonicalSize = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value) ?? "").length;
