import { resolve } from 'node:path'

/** Process settings from the environment, with the embedded defaults of decisions §1. */
export type Settings = {
  port: number
  host: string
  dataDir: string
  databaseFile: string
  logLevel: string
  production: boolean
  sandbox: boolean
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const production = env.NODE_ENV === 'production'
  const dataDir = resolve(env.DATA_DIR ?? './data')
  const port = Number(env.PORT ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`)
  const sandbox = (env.SANDBOX ?? (production ? 'off' : 'on')) === 'on'
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    dataDir,
    databaseFile: resolve(dataDir, 'parley.db'),
    logLevel: env.LOG_LEVEL ?? 'info',
    production,
    sandbox,
  }
}
