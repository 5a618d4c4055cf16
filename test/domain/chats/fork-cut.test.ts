import { describe, expect, it } from 'vitest'
import { decideForkCut, forkCutIsSettled } from '../../../src/domain/chats/fork-cut.ts'

const settled = { lastOrdinal: 40, lastSettledOrdinal: 40 }
const running = { lastOrdinal: 40, lastSettledOrdinal: 31 }

describe('decideForkCut', () => {
  it('absent cuts at the last settled part: the whole ledger at rest, before the running run otherwise', () => {
    expect(decideForkCut(undefined, settled)).toEqual({ kind: 'cut', upTo: 40 })
    expect(decideForkCut(null, running)).toEqual({ kind: 'cut', upTo: 31 })
    expect(decideForkCut(undefined, { lastOrdinal: null, lastSettledOrdinal: null })).toEqual({ kind: 'cut', upTo: null })
    expect(decideForkCut(undefined, { lastOrdinal: 5, lastSettledOrdinal: null })).toEqual({ kind: 'cut', upTo: null })
  })

  it('takes any ordinal from 1 to the last settled one', () => {
    expect(decideForkCut(1, settled)).toEqual({ kind: 'cut', upTo: 1 })
    expect(decideForkCut(40, settled)).toEqual({ kind: 'cut', upTo: 40 })
    expect(decideForkCut(31, running)).toEqual({ kind: 'cut', upTo: 31 })
  })

  it('refuses below 1, beyond the ledger, an empty ledger, and inside the running run', () => {
    for (const [requested, ledger, words] of [
      [0, settled, 'at least 1'],
      [-1, settled, 'at least 1'],
      [1.5, settled, 'at least 1'],
      [41, settled, 'last ordinal is 40'],
      [1, { lastOrdinal: null, lastSettledOrdinal: null }, 'empty'],
      [32, running, 'last settled ordinal is 31'],
      [40, running, 'not settled'],
      [3, { lastOrdinal: 5, lastSettledOrdinal: null }, 'no part is settled'],
    ] as const) {
      const cut = decideForkCut(requested, ledger)
      expect(cut.kind, `${requested}`).toBe('refused')
      expect(cut.kind === 'refused' && cut.message).toContain(words)
      expect(forkCutIsSettled(requested, ledger)).toBe(false)
    }
  })
})
