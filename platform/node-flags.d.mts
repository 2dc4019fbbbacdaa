export declare const DEFAULT_NODE_FLAGS: readonly string[];
export declare function nodeFlags(name: string, env?: NodeJS.ProcessEnv): readonly string[];
