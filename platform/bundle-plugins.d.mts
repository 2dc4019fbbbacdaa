import type { Plugin } from "esbuild";

/** See bundle-plugins.mjs. */
export function sourceLocation(inputs?: Record<string, string>): Plugin;
