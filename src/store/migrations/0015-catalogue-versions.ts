import type { Database } from 'better-sqlite3'

/**
 * Imported catalogue versions (docs/decisions/041-catalogue-lifecycle.md). The shipped file is version 0 and
 * is not stored; each import is the next number, its whole file as JSON, in force from `effective_at`
 * (prices and lifecycle alike). Rows are never changed: a correction is a newer version.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE catalogue_versions (
      version INTEGER PRIMARY KEY CHECK (version >= 1),
      effective_at TEXT NOT NULL,
      imported_at TEXT NOT NULL,
      source TEXT NOT NULL,
      body TEXT NOT NULL CHECK (json_valid(body))
    ) STRICT;
    CREATE INDEX catalogue_versions_by_effective_at ON catalogue_versions (effective_at);
  `)
}
