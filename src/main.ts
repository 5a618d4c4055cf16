import { readBuildInfo } from './build-info.ts'
import { composeApp } from './compose.ts'
import { buildApp, REDACTED_LOG_PATHS } from './http/app.ts'
import { bootstrapDevOrganisation } from './store/bootstrap-dev-organisation.ts'
import { openDatabase, schemaVersionOf } from './store/database.ts'
import { migrations } from './store/migrations/index.ts'
import { createStore, replaceConnection } from './store/index.ts'
import { SERVER_AUTOCHECKPOINT_PAGES, startWalCheckpointer, type WalCheckpointer } from './store/wal-checkpointer.ts'
import { activeProviders, keyVariableNotes } from './providers/catalogue/active-providers.ts'
import { activeModels, activeProvidersLine } from './providers/catalogue/active-providers-line.ts'
import { createCatalogueService } from './providers/catalogue/catalogue-service.ts'
import { storedCatalogueVersions } from './providers/catalogue/catalogue-import.ts'
import { loadCatalogue } from './providers/catalogue/load-catalogue.ts'
import { readSettings } from './settings.ts'
import { keepDevCredentials, markDevBannerShown, owedDevBanner, renderDevBanner } from './cli/dev-banner.ts'
import { chooseLogFormat, logStream } from './logging/log-format.ts'
import { runSettledLine } from './logging/run-settled-line.ts'
import { inspectionSetting, relayAnswers } from './actors/inspection.ts'
import { NO_POSITION } from './store/replication-position.ts'
import { startLitefsWatch } from './store/litefs-watch.ts'
import { startReadThread } from './store/read-thread.ts'
import { installStorageStall } from './store/storage-stall.ts'
import { ALWAYS_PRIMARY, litefsRole } from './store/replication-role.ts'

const settings = readSettings()
// LiteFS's files are read on a thread of their own from here on (decision 048): the main thread
// never touches the mount for its role or position, and a look litefs leaves unanswered is a stall.
const watch = settings.litefs
  ? startLitefsWatch(
      { primaryFile: settings.litefs.primaryFile, lagFile: settings.litefs.lagFile, positionFile: settings.litefs.positionFile },
      settings.litefs.primaryPort,
      litefsRole(settings.litefs.primaryFile, settings.litefs.lagFile, settings.litefs.primaryPort).current(),
    )
  : null
installStorageStall(watch)
const role = watch ? watch.role : ALWAYS_PRIMARY
// A replica whose primary has not yet created and migrated the database waits for it to arrive
// whole: opened half-way (seen on the LiteFS cluster test), its statements would not prepare.
const schemaArrived = () => (schemaVersionOf(settings.databaseFile) ?? -1) >= migrations.length
if (role.current().kind !== 'primary' && !schemaArrived()) {
  process.stdout.write(`waiting for the primary's database (schema version ${migrations.length}) to replicate to ${settings.databaseFile}\n`)
  while (role.current().kind !== 'primary' && !schemaArrived()) await new Promise((resolve) => setTimeout(resolve, 200))
}
const startedAsPrimary = role.current().kind === 'primary'
const store = createStore(openDatabase(settings.databaseFile, { replica: !startedAsPrimary, autocheckpointPages: SERVER_AUTOCHECKPOINT_PAGES }))
/** The role this process serves in now: it follows LiteFS's without a restart (decision 009). */
let servingAsPrimary = startedAsPrimary

const loaded = loadCatalogue()
const catalogue = createCatalogueService(
  loaded,
  activeProviders(process.env, settings.sandbox),
  (since) => store.providerCalls.statsSince(since),
  store.now,
  // Imported catalogue versions, read from the (replicated) database on each refresh and version check (decision 041).
  storedCatalogueVersions(store),
)
const stopStats = catalogue.start()
// Registered again on each new connection's query modules (a role change).
const wireStore = () => store.providerCalls.onRecord(() => catalogue.noteCall())
wireStore()

const position = watch ? watch.position : NO_POSITION
// History reads (and their key lookups) on a thread with its own connection (decision 048).
const reads = settings.databaseFile === ':memory:' ? null : startReadThread(settings.databaseFile, () => store.db, () => servingAsPrimary, watch?.shared ?? null, () => checkpointer?.checkpointNow() ?? null)
// The threads are started now, not at the first history read: under LiteFS a stall may come before
// it, and anywhere their start (a few seconds on a busy machine) would otherwise be that read's wait.
reads?.warm()
const deps = composeApp({
  reads,
  store,
  catalogue,
  allModels: loaded.entries,
  build: readBuildInfo(),
  role,
  position,
  maxRunningRunsPerOrg: settings.maxRunningRunsPerOrg,
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
    maxConcurrentTurns: settings.maxConcurrentTurns,
    shedLoopDelayMs: settings.shedLoopDelayMs,
    shedFromTurns: settings.shedFromTurns,
    readerLimits: settings.readerLimits,
    ...(settings.rateLimitPerMinute === null ? {} : { rateLimitPerMinute: settings.rateLimitPerMinute }),
  },
)

// The primary's log is copied back into the database file on a thread of its own (decision 034); started
// once `app` can log what it reports.
const checkpointOnThread = () => startWalCheckpointer(settings.databaseFile, (message) => app.log.warn({ message }, 'WAL checkpoint failed'))
let checkpointer: WalCheckpointer | null = startedAsPrimary ? checkpointOnThread() : null

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
  store.db.close()
  process.exit(1)
}

if (dev) {
  process.stdout.write(renderDevBanner(dev, settings.dataDir, address))
  markDevBannerShown(settings.dataDir)
}
const providersLine = activeProvidersLine(activeModels(catalogue.list()))
app.log[providersLine.level](providersLine.fields, providersLine.message)
// A key read from an alias, an alias not read, a vendor's variable that is never read (decision 060).
for (const note of keyVariableNotes(process.env)) app.log[note.level](note.fields, note.message)

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
/**
 * SIGTERM or SIGINT (a deploy, `litefs mount` passing its signal on): no new turns; running
 * runs get SHUTDOWN_GRACE_MS to end, then are stopped and settled as interrupted, so no chat is left
 * blocked by a lease this process no longer renews (decision 009). Then the process ends.
 */
async function shutDown(why: Record<string, unknown>) {
  if (stopping) return
  stopping = true
  app.log.info({ ...why, graceMs: settings.shutdownGraceMs }, 'shutting down')
  clearInterval(roleWatch)
  // New turns are refused with 503 while the runs in flight end (their streams stay open meanwhile);
  // then the server closes, ending any stream still open.
  if (servingAsPrimary) await deps.host.drain(settings.shutdownGraceMs)
  stopStats()
  stopHost()
  deps.host.stopAll()
  await checkpointer?.stop()
  await reads?.stop()
  watch?.stop()
  await Promise.race([app.close(), new Promise((resolve) => setTimeout(resolve, 5_000).unref())])
  store.db.close()
  process.exit(0)
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutDown({ signal }))

/**
 * LiteFS moved the primary (decision 009). Promoted: the database is opened writable and migrated,
 * and every run still `running` is settled at once (the only writer knows nobody streams them).
 * Demoted: every chat's actor gives its chat up (running streams end with `unavailable`), and the
 * database is opened read-only; writes are relayed to the new primary from then on. A change that
 * fails (the file cannot be opened yet) is tried again at the next look.
 */
function followRole() {
  const current = role.current()
  const primaryNow = current.kind === 'primary'
  if (primaryNow === servingAsPrimary || stopping) return
  const was = servingAsPrimary ? 'primary' : 'replica'
  try {
    if (primaryNow) {
      replaceConnection(store, openDatabase(settings.databaseFile, { autocheckpointPages: SERVER_AUTOCHECKPOINT_PAGES }))
      wireStore()
      checkpointer = checkpointOnThread()
      servingAsPrimary = true
      const settled = deps.host.takeOver()
      app.log.info({ role: current, was, node: deps.nodeId, runsSettled: settled.length }, 'promoted: this node is the primary')
    } else {
      servingAsPrimary = false
      const relinquished = deps.host.relinquishAll('this node is no longer the primary; the run is settled by the new primary')
      void checkpointer?.stop()
      checkpointer = null
      replaceConnection(store, openDatabase(settings.databaseFile, { replica: true }))
      wireStore()
      app.log.info({ role: current, was, node: deps.nodeId, runsRelinquished: relinquished }, 'demoted: this node is a replica')
    }
  } catch (error) {
    app.log.error({ err: error, role: current, was }, 'role change not completed; trying again')
  }
}

app.log.info({ role: role.current(), node: deps.nodeId, node_version: process.version }, 'replication role')
// Five looks a second: a demoted node stops taking turns within a fifth of a second of LiteFS.
const roleWatch = setInterval(followRole, 200)
roleWatch.unref()
