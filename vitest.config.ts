import { configDefaults, defineConfig } from 'vitest/config'

/**
 * The domain's unit tests share one module graph per worker (isolate: false): importing the modules
 * anew for each of these small files cost more than their tests (decision 019). A file that mocks a
 * module (vi.mock) stays isolated, or its mock would leak into the files after it.
 */
const DOMAIN = 'test/domain/**/*.test.ts'
const DOMAIN_MOCKING = ['test/domain/config/estimate-tokens-saturation.test.ts']

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time: most of the suite's wall time is end-to-end files waiting on server
    // processes, leases and deadlines, which overlap well on 2 cores (decision 019).
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'domain', include: [DOMAIN], exclude: [...configDefaults.exclude, ...DOMAIN_MOCKING], isolate: false } },
      { extends: true, test: { name: 'domain-mocking', include: DOMAIN_MOCKING } },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, DOMAIN] } },
    ],
  },
})
