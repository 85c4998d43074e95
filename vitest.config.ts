import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // Every unit file builds its gateways from the same modules; evaluating them once per worker instead of once
          // per file cuts the project's time by more than half (docs/decisions.md, "The unit tests share their
          // workers"). No unit test may leave a mock, a fake clock or a global behind: each restores what it changes.
          isolate: false,
          include: [
            'test/unit/**/*.test.ts',
            'test/storage/memory.test.ts',
            'test/storage/file.test.ts',
            'test/storage/sqlite.test.ts',
            'test/storage/unstorage.test.ts',
            'test/storage/read-cache.test.ts',
          ],
          // A file that replaces a module (`vi.mock`) would leave the replacement to the files after it: those run below.
          exclude: ['test/unit/**/*.mock.test.ts'],
        },
      },
      {
        test: {
          name: 'unit-mocks',
          include: ['test/unit/**/*.mock.test.ts'],
        },
      },
      {
        // The drivers' contract suites on the local servers, one file at a time, beside the processes below.
        test: {
          name: 'storage',
          include: ['test/storage/**/*.test.ts'],
          exclude: ['test/storage/memory.test.ts', 'test/storage/file.test.ts', 'test/storage/sqlite.test.ts', 'test/storage/unstorage.test.ts', 'test/storage/read-cache.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // Several gateway processes on one store (books, leases, faults): one file at a time.
        test: {
          name: 'services',
          include: ['test/integration/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
})
