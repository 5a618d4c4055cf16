import type { Database } from 'better-sqlite3'

/**
 * The chats of responses not to be stored (the OpenAI facade's `store: false`, decision 055), found
 * without reading every run: a node that stopped before deleting one deletes it when it next starts.
 */
export function up(db: Database): void {
  db.exec(`CREATE INDEX runs_unstored_chat ON runs(chat_id) WHERE json_extract(manifest, '$.openai_request.store') = 0`)
}
