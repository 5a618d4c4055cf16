import { join } from 'node:path'
import type { PartBody } from '../src/domain/parts.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import type { NewPart } from '../src/store/parts.ts'

export type Seeded = { key: string; chatId: string; firstOrdinal: number; lastOrdinal: number }

const SENTENCE = 'The quick brown fox jumps over the lazy dog while the ledger keeps every part in order. '

function partAt(i: number): NewPart {
  // Alternating prompts and replies of a few hundred characters, like a long support conversation.
  const text = `#${i} ${SENTENCE.repeat(1 + (i % 4))}`
  const body: PartBody = i % 2 === 0 ? { type: 'prompt', text } : { type: 'message', text }
  return { body, userMetadata: i % 10 === 0 ? { turn: i / 10 } : {} }
}

/**
 * Writes an organisation, an API key and one chat of `parts` parts straight into DATA_DIR's
 * database (through the store, in batches of `batch` parts, each batch one transaction), before
 * the server is started on it.
 */
export function seedLargeChat(dataDir: string, parts: number, batch = 5_000): Seeded {
  const db = openDatabase(join(dataDir, 'parley.db'))
  try {
    const store = createStore(db)
    const org = store.organisations.create('Benchmark', 'bench')
    const { key } = store.apiKeys.create(org.id, 'bench')
    const chat = store.chats.create({
      orgId: org.id,
      namespace: 'bench/history',
      title: `${parts} parts`,
      description: null,
      userMetadata: {},
    })
    let firstOrdinal = Number.NaN
    let lastOrdinal = Number.NaN
    for (let start = 0; start < parts; start += batch) {
      const rows = store.parts.append(
        chat.id,
        Array.from({ length: Math.min(batch, parts - start) }, (_, j) => partAt(start + j)),
      )
      if (start === 0) firstOrdinal = rows[0]!.ordinal
      lastOrdinal = rows.at(-1)!.ordinal
    }
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.pragma('optimize')
    return { key, chatId: chat.id, firstOrdinal, lastOrdinal }
  } finally {
    db.close()
  }
}
