import { readBuildInfo } from './build-info.ts'
import { composeApp } from './compose.ts'
import { buildApp, REDACTED_LOG_PATHS } from './http/app.ts'
import { bootstrapDevOrganisation } from './store/bootstrap-dev-organisation.ts'
import { openDatabase } from './store/database.ts'
import { createStore } from './store/index.ts'
import { activeProviders } from './providers/catalogue/active-providers.ts'
import { createCatalogueService } from './providers/catalogue/catalogue-service.ts'
import { loadCatalogue } from './providers/catalogue/load-catalogue.ts'
import { readSettings } from './settings.ts'
import { keepDevCredentials, markDevBannerShown, owedDevBanner, renderDevBanner } from './cli/dev-banner.ts'
import { chooseLogFormat, logStream } from './logging/log-format.ts'
import { runSettledLine } from './logging/run-settled-line.ts'
import { inspectionSetting, relayAnswers } from './actors/inspection.ts'
import { litefsPosition, NO_POSITION } from './store/replication-position.ts'
import { ALWAYS_PRIMARY, litefsRole } from './store/replication-role.ts'

const settings = readSettings()
const role = settings.litefs ? litefsRole(settings.litefs.primaryFile, settings.litefs.primaryPort) : ALWAYS_PRIMARY
const startedAsPrimary = role.current().kind === 'primary'
const db = openDatabase(settings.databaseFile, { replica: !startedAsPrimary })
const store = createStore(db)

const loaded = loadCatalogue()
const catalogue = createCatalogueService(
  loaded,
  activeProviders(process.env, settings.sandbox),
  (since) => store.providerCalls.statsSince(since),
  store.now,
)
const stopStats = catalogue.start()
store.providerCalls.onRecord(() => catalogue.noteCall())

const position = settings.litefs ? litefsPosition(settings.litefs.positionFile) : NO_POSITION
const deps = composeApp({
  store,
  catalogue,
  allModels: loaded.entries,
  build: readBuildInfo(),
  role,
  position,
  // Runs settle only for turns the app admitted, so `app` exists by the time this is called.
  onRunSettled: (settled, cost) => app.log.info(runSettledLine(settled, settled.outcome, cost), 'run settled'),
})
const stopHost = deps.host.start()
const logFormat = chooseLogFormat(process.env, process.stdout.isTTY === true)
const pretty = logStream(logFormat, process.stdout, process.stdout.isTTY === true)
const app = await buildApp(
  deps,
  {
    logger: { level: settings.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' }, ...(pretty ? { stream: pretty } : {}) },
    requestTimeoutMs: settings.requestTimeoutMs,
    ...(settings.rateLimitPerMinute === null ? {} : { rateLimitPerMinute: settings.rateLimitPerMinute }),
  },
)

// Bootstrap before listening, so the key file exists by the time the server answers.
// Only the primary writes; a replica's first start finds the primary's organisation replicated.
// A start that created the organisation and then failed (its port taken) leaves the banner owed:
// the next start prints it (decision 022).
const bootstraps = !settings.production && startedAsPrimary
const created = bootstraps ? bootstrapDevOrganisation(store) : null
if (created) keepDevCredentials(settings.dataDir, created)
const dev = created ?? (bootstraps ? owedDevBanner(settings.dataDir, store) : null)

let address: string
try {
  address = await app.listen({ port: settings.port, host: settings.host })
} catch (error) {
  app.log.error({ err: error }, `cannot listen on ${settings.host}:${settings.port}`)
  stopStats()
  stopHost()
  deps.host.stopAll()
  db.close()
  process.exit(1)
}

if (dev) {
  process.stdout.write(renderDevBanner(dev, settings.dataDir, address))
  markDevBannerShown(settings.dataDir)
}

// Inspection (README, "Watching a chat live"): say whether it is on, and whether the relay answers;
// the actors keep trying to reach it every 5 s, so a relay started later is picked up.
const inspection = inspectionSetting(process.env)
if (inspection.kind === 'on') {
  const fields = { inspect: inspection.url, content: inspection.content }
  if (await relayAnswers(inspection.url)) app.log.info(fields, 'inspection on: chat actors report to the inspector relay')
  else app.log.warn(fields, 'inspection on, but the inspector relay does not answer: start it with `npm run inspect`')
} else {
  app.log.info('inspection off (STATELY_INSPECT unset)')
}

let stopping = false
function shutDown(why: Record<string, unknown>, exitCode: number) {
  if (stopping) return
  stopping = true
  app.log.info(why, 'shutting down')
  stopStats()
  stopHost()
  clearInterval(roleWatch)
  deps.host.stopAll()
  void app.close().finally(() => {
    db.close()
    process.exit(exitCode)
  })
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => shutDown({ signal }, 0))

// A replica's connection never writes; promoted (or demoted), the process ends with EX_TEMPFAIL so
// its supervisor (litefs mount, then Fly) starts it again in its new role (decision 009).
const ROLE_CHANGED_EXIT_CODE = 75
app.log.info({ role: role.current(), node: deps.nodeId }, 'replication role')
const roleWatch = setInterval(() => {
  const current = role.current()
  if ((current.kind === 'primary') !== startedAsPrimary) shutDown({ role: current, was: startedAsPrimary ? 'primary' : 'replica' }, ROLE_CHANGED_EXIT_CODE)
}, 1_000)
roleWatch.unref()
