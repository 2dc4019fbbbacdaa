#!/usr/bin/env node
// The installed `drover` command (package.json "bin"): loads the TypeScript CLI through tsx.
import { register } from "tsx/esm/api";

register();
const { cli } = await import("./drover.ts");
await cli();
