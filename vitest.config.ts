import { defineConfig } from "vitest/config";

// One vitest project per test tier; each tier names the boundary it crosses
// (../shared/design/conventions.md "Tests"). `make test` runs them all.
// `isolate: false` (unit): a worker runs its files one after another in one module graph instead
// of a fresh worker and a fresh import of the graph per file; per-file start-up was most of the unit
// tier's time (the tests themselves ~9 s of its ~65 s). Unit files keep no state across files
// (vi.spyOn / fake timers are restored in the file; no vi.mock). Every other tier keeps a fresh worker
// per file: int's in-process followers are process-wide (platform/follow.ts, read by /readyz), and
// host (tried: 15-25 s less) was left isolated until it has more clean runs than three (one failed a
// load bound beside other work); e2e, k8s and proof were not measured enough to change.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "{contracts,aggregates,platform,streams,services,cli,k8s,bench,proof,sdk}/**/*.unit.test.ts",
            "test/unit/**/*.test.ts",
          ],
          testTimeout: 20_000,
          isolate: false,
        },
      },
      {
        test: {
          name: "int",
          include: ["test/int/**/*.int.test.ts"],
          globalSetup: ["test/support/int-global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: "host",
          include: ["test/host/**/*.host.test.ts"],
          globalSetup: ["test/support/int-global-setup.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: "k8s",
          include: ["test/k8s/**/*.k8s.test.ts"],
          globalSetup: ["test/k8s/support/global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.e2e.test.ts"],
          globalSetup: ["test/support/int-global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: "proof",
          include: ["test/proof/**/*.proof.test.ts"],
          globalSetup: ["test/support/int-global-setup.ts"],
          testTimeout: 900_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
        },
      },
    ],
  },
});
