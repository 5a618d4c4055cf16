import { readFileSync } from 'node:fs'

/**
 * Where this node's copy of the database stands in LiteFS's replication log: the TXID that LiteFS
 * writes, with a checksum, to the `-pos` file beside the database ("00000000002df417/ce552e44f23fbbdd").
 * A replica that relays a write waits until its own copy has that write before it answers, so the
 * caller's next read on the same node sees it (decision 009).
 */
export type ReplicationPosition = {
  /** This node's TXID, or null without LiteFS. */
  current(): bigint | null
  /** Resolves true once this node's TXID is at least `txid`, false after `timeoutMs`. */
  waitFor(txid: bigint, timeoutMs: number): Promise<boolean>
}

export const NO_POSITION: ReplicationPosition = { current: () => null, waitFor: async () => true }

/** The TXID of a `-pos` file's content; null when it is not one. */
export function parsePosition(content: string): bigint | null {
  const match = /^([0-9a-f]{16})\//i.exec(content.trim())
  return match ? BigInt(`0x${match[1]}`) : null
}

export const formatTxid = (txid: bigint): string => txid.toString(16).padStart(16, '0')

const POLL_MS = 5

/** Polls `current` until it reaches `txid` (true) or `timeoutMs` has passed (false): a position's `waitFor`. */
export async function waitForPosition(current: () => bigint | null, txid: bigint, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const here = current()
    if (here !== null && here >= txid) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

export function litefsPosition(posFile: string): ReplicationPosition {
  const current = () => {
    try {
      return parsePosition(readFileSync(posFile, 'utf8'))
    } catch {
      return null
    }
  }
  return {
    current,
    waitFor: (txid, timeoutMs) => waitForPosition(current, txid, timeoutMs),
  }
}
