import type { Database } from 'better-sqlite3'

/**
 * Versioned configuration of all four kinds in one table. `scope` is the namespace or '' for the
 * organisation-global scope; `model_id` is a budget's model tag or '' for the scope default, so
 * both take part in UNIQUE and primary keys (NULLs would not).
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE config_versions (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('instructions','tools','retention','budget')),
      scope TEXT NOT NULL,
      model_id TEXT NOT NULL,
      version INTEGER NOT NULL,
      mode TEXT CHECK (mode IN ('append','replace')),
      document TEXT NOT NULL,
      estimated_tokens INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      UNIQUE (org_id, kind, scope, model_id, version)
    ) STRICT;

    -- At most one active version per (org, kind, scope, model); withdrawing deletes the row.
    CREATE TABLE config_active (
      org_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      scope TEXT NOT NULL,
      model_id TEXT NOT NULL,
      version_id TEXT NOT NULL REFERENCES config_versions(id) ON DELETE CASCADE,
      PRIMARY KEY (org_id, kind, scope, model_id)
    ) STRICT, WITHOUT ROWID;
  `)
}
