import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
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

const settings = readSettings()
const db = openDatabase(settings.databaseFile)
const store = createStore(db)

const loaded = loadCatalogue()
const catalogue = createCatalogueService(
  loaded,
  activeProviders(process.env, settings.sandbox),
  (since) => store.providerCalls.statsSince(since),
)
const stopStats = catalogue.start()

const deps = composeApp({ store, catalogue, allModels: loaded.entries, build: readBuildInfo() })
const stopHost = deps.host.start()
const app = await buildApp(
  deps,
  { logger: { level: settings.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } } },
)

// Bootstrap before listening, so the key file exists by the time the server answers.
const dev = settings.production ? null : bootstrapDevOrganisation(store)
const keyFile = resolve(settings.dataDir, 'dev-api-key.txt')
if (dev) writeFileSync(keyFile, `${dev.key}\n`, { mode: 0o600 })

const address = await app.listen({ port: settings.port, host: settings.host })

if (dev) {
  // Printed once on purpose (decisions §1); the logger redacts keys, so this bypasses it.
  process.stdout.write(
    `\nCreated organisation "dev" with 10.00 USD of promotional credit.\n` +
      `API key (also in ${keyFile}):\n\n  ${dev.key}\n\nTry:\n\n` +
      `  curl -s -X POST ${address}/api/v1/chats -H "Authorization: Bearer ${dev.key}" ` +
      `-H 'content-type: application/json' -d '{"title":"hello"}'\n\n`,
  )
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    app.log.info({ signal }, 'shutting down')
    stopStats()
    stopHost()
    deps.host.stopAll()
    void app.close().finally(() => {
      db.close()
      process.exit(0)
    })
  })
}
