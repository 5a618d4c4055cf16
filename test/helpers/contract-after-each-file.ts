import { afterAll } from 'vitest'
import { contractCheckEnabled, verifyAfterFile } from './contract-check.ts'

/**
 * A setup file of the projects whose files share one module graph per worker (vitest.config.ts):
 * there contract-check.ts is imported once per worker, so its own afterAll would check only the
 * first file; this registers the check on every file. Checking twice finds nothing the second time.
 */
if (contractCheckEnabled) afterAll(verifyAfterFile)
