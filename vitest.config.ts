import { configDefaults, defineConfig } from 'vitest/config'
import { machineCeiling } from './test/helpers/machine-timeouts.ts'

/**
 * The domain's unit tests share one module graph per worker (isolate: false): importing the modules
 * anew for each of these small files cost more than their tests (decision 019). A file that mocks a
 * module (vi.mock) stays isolated, or its mock would leak into the files after it.
 */
const DOMAIN = 'test/domain/**/*.test.ts'
const DOMAIN_MOCKING = [
  'test/domain/config/estimate-tokens-saturation.test.ts',
  // These two count what the estimator hands gpt-tokenizer (test/helpers/bpe-work.ts).
  'test/domain/tokens/bounded-estimate.test.ts',
  'test/domain/tokens/estimate-tokens.test.ts',
]
/**
 * In-process files (apps through inject or a loopback socket, the store, the actors, the machine)
 * share one module graph per worker too: importing Fastify, the vendor packages and the app anew for
 * each file was a third of the suite's CPU. Each file still builds its own app, store and actors.
 */
const SHARED = ['test/{http,actors,store,providers,machines,logging}/**/*.test.ts']
const SHARED_ISOLATED = [
  'test/store/config-token-estimates.test.ts',
  // Counts the reads of the tool schemas it sends (test/helpers/counted-reads.ts) through a mock of validate-tool-bundle.ts.
  'test/http/fuzz-regressions.test.ts',
]
/**
 * Parley on a real LiteFS cluster (FUSE, litefs, three servers): not part of `npm test`, run on its
 * own by `npm run test:cluster` (vitest.cluster.config.ts), which `.ci/run` runs after it.
 */
export const LITEFS_TEST_FILES = ['test/cluster/cluster.test.ts', 'test/cluster/failover.test.ts', 'test/cluster/stalled-litefs.test.ts']

export default defineConfig({
  test: {
    // Backstops for a test or hook that never ends, scaled by the largest factor a wait for a process
    // inside them can get (test/helpers/machine-timeouts.ts; decision 019, "Under load"): a server
    // start or a CLI run waits up to its base times the load per core, and the timeout around it must
    // not cut it short. The wait itself is what reports a process that does not answer.
    testTimeout: machineCeiling(30_000),
    hookTimeout: machineCeiling(60_000),
    pool: 'forks',
    // Four files at a time on 2 cores: much of the suite's wall time is end-to-end files waiting on
    // server processes, leases and deadlines, which overlap with the in-process files (decision 019).
    maxWorkers: 4,
    projects: [
      { extends: true, test: { name: 'domain', include: [DOMAIN], exclude: [...configDefaults.exclude, ...DOMAIN_MOCKING], isolate: false } },
      { extends: true, test: { name: 'domain-mocking', include: DOMAIN_MOCKING } },
      {
        extends: true,
        test: { name: 'shared', include: SHARED, exclude: [...configDefaults.exclude, ...SHARED_ISOLATED], isolate: false, setupFiles: ['test/helpers/contract-after-each-file.ts'] },
      },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, DOMAIN, ...SHARED, ...LITEFS_TEST_FILES] } },
      { extends: true, test: { name: 'shared-isolated', include: SHARED_ISOLATED } },
    ],
  },
})
