import type { Database } from 'better-sqlite3'

/**
 * docs/guide/runs.md, one running run per chat (issue 12): the chat actor enforces it, and this index makes
 * a second running customer run of a chat impossible to write, whatever went wrong above it.
 * Compaction runs are left out: they run during a customer turn, and several at once.
 *
 * Before issue 11 was fixed, a restart under another node id could admit a turn beside an orphaned
 * run, so a ledger may hold two running customer runs of a chat. All of them predate this start, so
 * none is streamed by anyone now: the newest stays `running` for the lease sweep to settle as usual;
 * the older ones end `failed` with error `interrupted`, unsettled (their usage is lost, so nothing is
 * charged for them), since settling needs the catalogue, which a migration does not have.
 */
export function up(db: Database): void {
  db.exec(`
    UPDATE runs SET status = 'failed', error = 'interrupted',
      completed_at = COALESCE(lease_expires_at, created_at), lease_owner = NULL, lease_expires_at = NULL
    WHERE status = 'running' AND origin = 'customer'
      AND EXISTS (
        SELECT 1 FROM runs AS newer
        WHERE newer.chat_id = runs.chat_id AND newer.status = 'running' AND newer.origin = 'customer'
          AND (newer.created_at > runs.created_at OR (newer.created_at = runs.created_at AND newer.rowid > runs.rowid))
      );
    CREATE UNIQUE INDEX IF NOT EXISTS runs_one_running_customer_run ON runs(chat_id) WHERE status = 'running' AND origin = 'customer';
  `)
}
