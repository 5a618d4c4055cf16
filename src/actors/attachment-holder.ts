import type { AttachmentBytes } from '../domain/turns/submission.ts'

/**
 * The bytes of the attachments of the submissions in flight on this node, by SHA-256 (decision 049).
 * A submission names its attachments by hash, so neither the chat machine's context nor its events
 * hold bytes: the route hands the bytes to the host with the submission, the host holds them here
 * until the machine has decided the submission (admitted, written to the ledger, or rejected), and
 * admission reads them from here. Past that, the ledger holds them (`media_blobs`, by the same hash),
 * and `bytesOf` reads them from it. What is held is bounded by the turns in flight (decision 033's
 * cap) times a turn's body limit; the same bytes sent twice at once are held once.
 */
export function createAttachmentHolder(readStored: (sha256: string) => Buffer | undefined) {
  const held = new Map<string, { bytes: Buffer; holds: number }>()
  return {
    /** Holds a submission's attachment bytes; the function returned lets them go (once). */
    hold(bytes: AttachmentBytes): () => void {
      if (bytes.size === 0) return () => {}
      for (const [sha256, content] of bytes) {
        const entry = held.get(sha256)
        if (entry) entry.holds++
        else held.set(sha256, { bytes: content, holds: 1 })
      }
      let released = false
      return () => {
        if (released) return
        released = true
        for (const sha256 of bytes.keys()) {
          const entry = held.get(sha256)
          if (entry && --entry.holds === 0) held.delete(sha256)
        }
      }
    },
    /** The bytes a hash names: held for a submission in flight, else read from the ledger. */
    bytesOf(sha256: string): Buffer {
      const bytes = held.get(sha256)?.bytes ?? readStored(sha256)
      if (!bytes) throw new Error(`no attachment with SHA-256 ${sha256} is held or stored`)
      return bytes
    },
    /** How many distinct attachments are held now. */
    get size(): number {
      return held.size
    },
  }
}

export type AttachmentHolder = ReturnType<typeof createAttachmentHolder>
