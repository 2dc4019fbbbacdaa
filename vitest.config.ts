import { defineConfig } from "vitest/config";

// One vitest project per test tier; each tier names the boundary it crosses
// (../shared/design/conventions.md "Tests"). `make test` runs them all.
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
