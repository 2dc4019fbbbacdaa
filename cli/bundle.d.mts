/** cli/bundle.mjs: the path of an up-to-date bundle of `entry` in `dir` (built if need be), or undefined. */
export function cliBundle(entry: string, dir: string, debug?: (line: string) => void): Promise<string | undefined>;
