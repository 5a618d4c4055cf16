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
  /**
   * LiteFS (decision 009): the mount holding the database, and the file that names the primary
   * (present on replicas only). Null without LiteFS: the one process is the primary.
   */
  litefs: { dir: string; primaryFile: string; primaryPort: number; positionFile: string } | null
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const production = env.NODE_ENV === 'production'
  const dataDir = resolve(env.DATA_DIR ?? './data')
  const port = Number(env.PORT ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`)
  const sandbox = (env.SANDBOX ?? (production ? 'off' : 'on')) === 'on'
  const litefsDir = env.LITEFS_DIR ? resolve(env.LITEFS_DIR) : null
  const primaryPort = Number(env.LITEFS_PRIMARY_PORT ?? port)
  if (!Number.isInteger(primaryPort) || primaryPort <= 0 || primaryPort > 65535) {
    throw new Error(`LITEFS_PRIMARY_PORT must be a port number, got ${env.LITEFS_PRIMARY_PORT}`)
  }
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    dataDir,
    databaseFile: resolve(litefsDir ?? dataDir, 'parley.db'),
    logLevel: env.LOG_LEVEL ?? 'info',
    production,
    sandbox,
    litefs: litefsDir
      ? {
          dir: litefsDir,
          primaryFile: resolve(env.LITEFS_PRIMARY_FILE ?? resolve(litefsDir, '.primary')),
          primaryPort,
          positionFile: resolve(env.LITEFS_POSITION_FILE ?? resolve(litefsDir, 'parley.db-pos')),
        }
      : null,
  }
}
