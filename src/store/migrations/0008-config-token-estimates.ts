import type { Database } from 'better-sqlite3'
import { estimateConfigDocumentTokens } from '../../domain/tokens/estimate-config-tokens.ts'

/**
 * Resolution now reads each instruction's and tool bundle's stored estimate instead of tokenizing
 * it on a request (docs/decisions/016-bounded-token-estimation.md). Rows written before were
 * estimated by the earlier estimator (exact BPE at any length), so their estimates are made again
 * with the bounded one, which agrees with what the sandbox and packing estimate for the same text.
 * Each document costs one bounded estimate; retention policies and budgets cost nothing.
 */
export function up(db: Database): void {
  const rows = db
    .prepare<[], { id: string; kind: string; document: string; estimated_tokens: number }>(
      `SELECT id, kind, document, estimated_tokens FROM config_versions WHERE kind IN ('instructions', 'tools')`,
    )
    .iterate()
  const update = db.prepare<[number, string]>('UPDATE config_versions SET estimated_tokens = ? WHERE id = ?')
  const changed: [number, string][] = []
  for (const row of rows) {
    const tokens = estimateConfigDocumentTokens(row.kind, JSON.parse(row.document))
    if (tokens !== row.estimated_tokens) changed.push([tokens, row.id])
  }
  for (const [tokens, id] of changed) update.run(tokens, id)
}
