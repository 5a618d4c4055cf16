import type { Database } from 'better-sqlite3'

/**
 * Forks (docs/decisions/037-fork.md). A fork's copied parts keep the run ids of the source's runs,
 * which stay in `runs` under the source chat's id. What the fork must know of those runs is kept
 * here, per fork: the failed ones (their output is never packed) and, with `pending`, the run whose
 * tool calls were left pending at the cut (the fork's next submission closes them). Deleted with
 * the fork; the runs themselves are never touched.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE inherited_runs (
      chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
      run_id TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('succeeded','failed','cancelled')),
      pending INTEGER NOT NULL DEFAULT 0 CHECK (pending IN (0, 1)),
      PRIMARY KEY (chat_id, run_id)
    ) STRICT, WITHOUT ROWID;
  `)
}
