import { openDatabase } from '../store/database.ts'
import { createStore } from '../store/index.ts'
import { readSettings } from '../settings.ts'
import { AdminError, runAdminCommand } from './admin-commands.ts'

// Works on the server's DATA_DIR while it runs: WAL and busy_timeout let both write.
try {
  const db = openDatabase(readSettings().databaseFile)
  try {
    const result = runAdminCommand(createStore(db), process.argv.slice(2))
    process.stdout.write(`${JSON.stringify(result)}\n`)
  } finally {
    db.close()
  }
} catch (error) {
  process.stderr.write(`admin: ${error instanceof AdminError ? error.message : String(error)}\n`)
  process.exitCode = 1
}
