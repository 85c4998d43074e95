import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'test/unit/**/*.test.ts',
            'test/storage/memory.test.ts',
            'test/storage/file.test.ts',
            'test/storage/sqlite.test.ts',
            'test/storage/unstorage.test.ts',
            'test/storage/read-cache.test.ts',
          ],
        },
      },
      {
        test: {
          name: 'services',
          include: ['test/integration/**/*.test.ts', 'test/storage/**/*.test.ts'],
          exclude: ['test/storage/memory.test.ts', 'test/storage/file.test.ts', 'test/storage/sqlite.test.ts', 'test/storage/unstorage.test.ts', 'test/storage/read-cache.test.ts'],
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
