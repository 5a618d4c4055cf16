import type { Database } from 'better-sqlite3'
import * as initial from './0001-initial.ts'
import * as configuration from './0002-configuration.ts'
import * as usageLedger from './0003-usage-ledger.ts'
import * as runs from './0004-runs.ts'
import * as balanceTotals from './0005-balance-totals.ts'
import * as failedRunsIndex from './0006-failed-runs-index.ts'
import * as summaries from './0007-summaries.ts'
import * as mergedSummaries from './0011-merged-summaries.ts'
import * as configTokenEstimates from './0008-config-token-estimates.ts'
import * as oneRunningCustomerRun from './0009-one-running-customer-run.ts'
import * as tokenCorrections from './0010-token-corrections.ts'
import * as runningRunsByOrg from './0012-running-runs-by-org.ts'
import * as runsByOrg from './0013-runs-by-org.ts'
import * as inheritedRuns from './0014-inherited-runs.ts'
import * as catalogueVersions from './0015-catalogue-versions.ts'
import * as providerCallMinutes from './0016-provider-call-minutes.ts'
import * as unstoredResponses from './0017-unstored-responses.ts'
import * as answerIndex from './0018-answer-index.ts'

export type Migration = { name: string; up: (db: Database) => void }

/** In order; the position + 1 is the `user_version` a migration leaves behind. Never reorder. */
export const migrations: Migration[] = [
  { name: '0001-initial', up: initial.up },
  { name: '0002-configuration', up: configuration.up },
  { name: '0003-usage-ledger', up: usageLedger.up },
  { name: '0004-runs', up: runs.up },
  { name: '0005-balance-totals', up: balanceTotals.up },
  { name: '0006-failed-runs-index', up: failedRunsIndex.up },
  { name: '0007-summaries', up: summaries.up },
  { name: '0008-config-token-estimates', up: configTokenEstimates.up },
  { name: '0009-one-running-customer-run', up: oneRunningCustomerRun.up },
  { name: '0010-token-corrections', up: tokenCorrections.up },
  { name: '0011-merged-summaries', up: mergedSummaries.up },
  { name: '0012-running-runs-by-org', up: runningRunsByOrg.up },
  { name: '0013-runs-by-org', up: runsByOrg.up },
  { name: '0014-inherited-runs', up: inheritedRuns.up },
  { name: '0015-catalogue-versions', up: catalogueVersions.up },
  { name: '0016-provider-call-minutes', up: providerCallMinutes.up },
  { name: '0017-unstored-responses', up: unstoredResponses.up },
  { name: '0018-answer-index', up: answerIndex.up },
]
