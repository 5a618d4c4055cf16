import { randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

// Random bytes drawn in bulk: one call to the system's generator per 256 ids instead of one per id.
const POOL_IDS = 256
const pool = new Uint8Array(POOL_IDS * 16)
let used = POOL_IDS
function pooledRandom(): Uint8Array {
  if (used === POOL_IDS) {
    randomFillSync(pool)
    used = 0
  }
  return pool.subarray(16 * used, 16 * ++used)
}

/**
 * A new resource id: a UUID (docs/guide/chats-and-ledger.md) of version 7, whose leading bits are the time. Rows made one
 * after another then sit side by side in their unique indexes, so a commit of many turns' rows
 * writes one index page where random ids would scatter them over many.
 */
export const newId = (): string => v7({ random: pooledRandom() })
