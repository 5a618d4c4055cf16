import { databaseErrorOf } from '../store/sqlite-errors.ts'
import { readSettings } from '../settings.ts'
import { AdminError, adminHelp, HANDOFF_USAGE } from './admin-commands.ts'
import { runAdminOn } from './admin-run.ts'
import { runHandoff } from './admin-handoff.ts'

/**
 * Works on the server's DATA_DIR while it runs: WAL and busy_timeout let both write. This process
 * serves nothing else, so it waits for a lock held elsewhere far longer than the server does
 * (docs/decisions/028-busy-and-full-database.md). On a LiteFS replica only the commands that read
 * run (src/cli/admin-run.ts).
 */
async function main(argv: string[]): Promise<void> {
  try {
    if (argv[0] === 'handoff') {
      process.stdout.write(argv.includes('--help') || argv.includes('-h') ? `usage: npm run -s admin -- ${HANDOFF_USAGE.trimStart()}\n` : await runHandoff(readSettings(), argv.slice(1)))
      return
    }
    const help = adminHelp(argv)
    // Help needs no database: it answers even where DATA_DIR cannot be opened.
    process.stdout.write(help ?? runAdminOn(readSettings(), argv))
  } catch (error) {
    const database = databaseErrorOf(error)
    const message = error instanceof AdminError ? error.message : database ? `${database.message} (${String(error)})` : String(error)
    process.stderr.write(`admin: ${message}\n`)
    process.exitCode = 1
  }
}

void main(process.argv.slice(2))
