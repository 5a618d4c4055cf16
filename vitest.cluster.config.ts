import { defineConfig } from 'vitest/config'
import { machineCeiling } from './test/helpers/machine-timeouts.ts'
import { LITEFS_TEST_FILES } from './vitest.config.ts'

/**
 * `npm run test:cluster`: the LiteFS cluster files alone, one at a time (each is three litefs mounts
 * and three servers on two cores), with each test's pass line shown. They need Linux, /dev/fuse,
 * FUSE 3 and litefs 0.5.14 (README, "Running the LiteFS cluster test locally"); a missing one fails.
 */
export default defineConfig({
  test: {
    include: LITEFS_TEST_FILES,
    testTimeout: machineCeiling(30_000),
    hookTimeout: machineCeiling(60_000),
    pool: 'forks',
    fileParallelism: false,
    reporters: ['verbose'],
  },
})
