// Lint enforces the boundary rules of ../shared/design/conventions.md:
// 1. domain code is pure (no IO modules, no clock, no randomness);
// 2. a service imports contracts/ and streams/, never another service;
// 3. product code does not import test support (tests import product code, never the reverse);
// 4. tests, benchmarks and the proof reach a service through its public surface, services/<name>/index.ts.
//    The only tests of a service's internals are the ones beside its code (services/<name>/**/*.test.ts:
//    its domain deciders and shell units), which the service's own blocks below govern.
// Flat config replaces a rule's options per matching block instead of merging them, so each block
// below lists every pattern that applies to its files.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const SERVICES = ["admission", "api", "capacity", "forensics", "provisioner", "recovery", "runtime", "scheduler"];

const ioModules = [
  {
    group: ["node:*", "@nats-io/*", "fastify", "fastify-*", "@kubernetes/*", "ioredis", "mongodb", "@grpc/*", "pino"],
    message: "domain code is pure: IO belongs in shell/",
  },
  {
    group: ["**/streams/**", "**/shell/**", "**/http/**", "**/grpc/**"],
    message: "domain code must not reach IO layers",
  },
];

const testSupport = {
  group: ["**/test/support/**"],
  message: "product code does not import test support: what the product needs belongs in product code",
};
const otherServices = (svc) => ({
  group: SERVICES.filter((s) => s !== svc).flatMap((s) => [`**/services/${s}/**`, `../../${s}/**`, `../${s}/**`]),
  message: "a service never imports another service: talk through subjects",
});
const servicePublicSurface = {
  group: ["**/services/*/*/**", "**/services/*/main.ts", "!**/services/*/index.ts"],
  message: "import a service through its index.ts (only its own tests beside its code test its internals)",
};
const restrictImports = (...patterns) => ({ "no-restricted-imports": ["error", { patterns }] });

const impureSyntax = [
  {
    selector: "MemberExpression[object.name='Date'][property.name='now']",
    message: "inject time through the command metadata",
  },
  {
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
    message: "inject time through the command metadata",
  },
  { selector: "MemberExpression[object.name='Math'][property.name='random']", message: "inject randomness/ids" },
  { selector: "MemberExpression[property.name='randomUUID']", message: "inject ids" },
  { selector: "MemberExpression[object.name='process']", message: "domain code must not read the process" },
];

export default tseslint.config(
  { ignores: ["node_modules/**", ".tools/**", ".run/**", "dist/**", "k8s/local-cluster/bin/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        Buffer: "readonly",
        URL: "readonly",
        AbortController: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        fetch: "readonly",
        structuredClone: "readonly",
        queueMicrotask: "readonly",
        setImmediate: "readonly",
        AbortSignal: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.property.name='only']", message: "no .only" },
      ],
    },
  },
  ...SERVICES.flatMap((svc) => [
    { files: [`services/${svc}/**/*.ts`], rules: restrictImports(otherServices(svc)) },
    {
      files: [`services/${svc}/**/*.ts`],
      ignores: ["**/*.test.ts"],
      rules: restrictImports(otherServices(svc), testSupport),
    },
    {
      files: [`services/${svc}/domain/**/*.ts`],
      ignores: ["**/*.test.ts"],
      rules: {
        ...restrictImports(otherServices(svc), testSupport, ...ioModules),
        "no-restricted-syntax": ["error", ...impureSyntax],
      },
    },
  ]),
  {
    files: ["contracts/**/*.ts", "aggregates/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: { ...restrictImports(testSupport, ...ioModules), "no-restricted-syntax": ["error", ...impureSyntax] },
  },
  {
    files: ["test/**/*.ts", "bench/**/*.ts", "proof/**/*.ts"],
    rules: restrictImports(servicePublicSurface),
  },
  {
    files: ["cli/**/*.ts", "platform/**/*.ts", "streams/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: restrictImports(testSupport),
  },
  {
    // The dashboard runs in the browser (plain ES modules served by the api, no build step).
    files: ["services/api/http/dashboard/**/*.js"],
    languageOptions: {
      globals: {
        document: "readonly",
        window: "readonly",
        location: "readonly",
        history: "readonly",
        sessionStorage: "readonly",
        URLSearchParams: "readonly",
        FormData: "readonly",
        Node: "readonly",
        CSS: "readonly",
        TextDecoderStream: "readonly",
      },
    },
  },
  {
    // Node's CommonJS (platform/hosts/runtime-loader.cjs: node runs it as it is, before any TypeScript).
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", module: "writable", __dirname: "readonly", __filename: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
