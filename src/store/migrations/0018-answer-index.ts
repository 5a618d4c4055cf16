import type { Database } from 'better-sqlite3'

/**
 * Each answer part's place in its run's answer (docs/decisions/056-erasing-items.md): the OpenAI
 * facade names an answer item by its run and this place (`msg_<run>_0`), and counting the run's
 * parts again would rename every later item once one is erased. Written when the part is, copied
 * with a fork's parts; null for parts that are no run's answer (input, carried history, tombstones).
 * Existing answers are numbered as they were counted before.
 */
export function up(db: Database): void {
  db.exec(`
    ALTER TABLE parts ADD COLUMN answer_index INTEGER;
    UPDATE parts SET answer_index = numbered.place
    FROM (
      SELECT ordinal, row_number() OVER (PARTITION BY chat_id, run_id ORDER BY ordinal) - 1 AS place
      FROM parts WHERE run_id IS NOT NULL AND kind IN ('message', 'reasoning', 'tool_call')
    ) AS numbered
    WHERE parts.ordinal = numbered.ordinal;
  `)
}
