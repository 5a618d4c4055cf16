import { openDatabase } from '../store/database.ts'
import { createStore } from '../store/index.ts'
import { litefsRole } from '../store/replication-role.ts'
import { readSettings } from '../settings.ts'
import { AdminError, adminHelp, runAdminCommand } from './admin-commands.ts'

/** Works on the server's DATA_DIR while it runs: WAL and busy_timeout let both write. */
function runCommand(argv: string[]): void {
  try {
    const settings = readSettings()
    // Most commands write, and only the LiteFS primary may (decision 009); all run there alike.
    const role = settings.litefs ? litefsRole(settings.litefs.primaryFile, settings.litefs.primaryPort).current() : { kind: 'primary' as const }
    if (role.kind !== 'primary') {
      const where = role.kind === 'replica' ? `the primary is ${role.primaryUrl}` : 'no primary is known yet'
      throw new AdminError(`this node is a LiteFS read replica and cannot write; run the command on the primary (${where})`)
    }
    const db = openDatabase(settings.databaseFile)
    try {
      const result = runAdminCommand(createStore(db), argv)
      process.stdout.write(`${JSON.stringify(result)}\n`)
    } finally {
      db.close()
    }
  } catch (error) {
    process.stderr.write(`admin: ${error instanceof AdminError ? error.message : String(error)}\n`)
    process.exitCode = 1
  }
}

const argv = process.argv.slice(2)
const help = adminHelp(argv)
// Help needs no database: it answers even where DATA_DIR cannot be opened.
if (help !== null) process.stdout.write(help)
else runCommand(argv)
