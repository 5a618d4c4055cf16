import { wallClock, type Clock, type Db } from './database.ts'

/**
 * Erasing parts from a chat's ledger (docs/decisions/056-erasing-items.md), in one transaction: the
 * rows go (their ordinals stay unused: deletes leave gaps), with their attachments, the bytes no other
 * part refers to, and every stored summary whose range holds one of them (it was written from them;
 * packing summarises that history again from what is left). The chat's part count follows.
 */
export function createErasureStore(db: Db, clock: Clock = wallClock) {
  const partIn = db.prepare<[number, string], { ordinal: number }>('SELECT ordinal FROM parts WHERE ordinal = ? AND chat_id = ?')
  const blobsOf = db.prepare<[number], { sha256: string }>('SELECT DISTINCT sha256 FROM part_media WHERE part_ordinal = ?')
  const removePart = db.prepare<[number]>('DELETE FROM parts WHERE ordinal = ?')
  const removeSummariesOver = db.prepare<[string, number, number]>('DELETE FROM summaries WHERE chat_id = ? AND first_ordinal <= ? AND last_ordinal >= ?')
  const removeUnusedBlob = db.prepare<[string, string]>('DELETE FROM media_blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM part_media WHERE sha256 = ?)')
  const lowerCount = db.prepare<[number, string, string]>('UPDATE chats SET part_count = part_count - ?, updated_at = ? WHERE id = ?')

  const erase = db.transaction((chatId: string, ordinals: readonly number[]): number => {
    const present = ordinals.filter((ordinal) => partIn.get(ordinal, chatId) !== undefined)
    const blobs = new Set(present.flatMap((ordinal) => blobsOf.all(ordinal).map((row) => row.sha256)))
    for (const ordinal of present) {
      removeSummariesOver.run(chatId, ordinal, ordinal)
      // Its attachments go with it (part_media cascades).
      removePart.run(ordinal)
    }
    for (const sha256 of blobs) removeUnusedBlob.run(sha256, sha256)
    if (present.length > 0) lowerCount.run(present.length, clock().toISOString(), chatId)
    return present.length
  })

  return {
    /** Erases the chat's parts at these ordinals (others' are left alone); returns how many went. */
    erase: (chatId: string, ordinals: readonly number[]) => erase(chatId, ordinals),
  }
}
