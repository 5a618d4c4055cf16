import { CLI_BUSY_TIMEOUT_MS, openDatabase } from '../store/database.ts'
import { createStore } from '../store/index.ts'
import { litefsRole } from '../store/replication-role.ts'
import { databaseErrorOf } from '../store/sqlite-errors.ts'
import { readSettings } from '../settings.ts'
import { AdminError, adminHelp, adminOutput } from './admin-commands.ts'

/**
 * Works on the server's DATA_DIR while it runs: WAL and busy_timeout let both write. This process
 * serves nothing else, so it waits for a lock held elsewhere far longer than the server does
 * (docs/decisions/028-busy-and-full-database.md).
 */
function runCommand(argv: string[]): void {
  try {
    const settings = readSettings()
    // Most commands write, and only the LiteFS primary may (decision 009); all run there alike.
    const role = settings.litefs ? litefsRole(settings.litefs.primaryFile, settings.litefs.lagFile, settings.litefs.primaryPort).current() : { kind: 'primary' as const }
    if (role.kind !== 'primary') {
      const where = role.kind === 'replica' ? `the primary is ${role.primaryUrl}` : 'no primary is known yet'
      throw new AdminError(`this node is a LiteFS read replica and cannot write; run the command on the primary (${where})`)
    }
    const db = openDatabase(settings.databaseFile, { busyTimeoutMs: CLI_BUSY_TIMEOUT_MS })
    try {
      process.stdout.write(adminOutput(createStore(db), argv))
    } finally {
      db.close()
    }
  } catch (error) {
    const database = databaseErrorOf(error)
    const message = error instanceof AdminError ? error.message : database ? `${database.message} (${String(error)})` : String(error)
    process.stderr.write(`admin: ${message}\n`)
    process.exitCode = 1
  }
}

const argv = process.argv.slice(2)
const help = adminHelp(argv)
// Help needs no database: it answers even where DATA_DIR cannot be opened.
if (help !== null) process.stdout.write(help)
else runCommand(argv)
