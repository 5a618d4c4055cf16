import { describe, expect, it } from 'vitest'
import type { RetentionRules } from '../../../src/domain/config/config-types.ts'
import type { PartBody, VendorReplay } from '../../../src/domain/parts.ts'
import { Ledger, TEN, pack, partAt, prompt, result } from './context-fixtures.ts'

/**
 * Replay data (decision 026) rides with the part it was stored with through packing to the
 * conversion: whole parts carry it; a part whose payload retention cut does not (the vendor signed
 * what it said, not Parley's cut).
 */

const SIGNED: VendorReplay = { provider: 'google', metadata: { google: { thoughtSignature: 'sig-call' } } }
const SIGNED_TEXT: VendorReplay = { provider: 'google', metadata: { google: { thoughtSignature: 'sig-text' } } }

const chat = (rules: RetentionRules) => {
  const ledger = new Ledger()
    .add(1, prompt('Weather in Oslo?'))
    .add(2, { type: 'tool_call', tool_use_id: 'c1', tool_name: 'get_weather', arguments: `{"city":"Oslo","note":"${TEN}"}`, replay: SIGNED }, { runId: 'r1' })
    .add(3, result('c1', 'get_weather', 'sunny'), { runId: 'r2' })
    .add(4, { type: 'message', text: `It is sunny.${TEN}`, replay: SIGNED_TEXT } satisfies PartBody, { runId: 'r2' })
    .add(5, { type: 'reasoning', text: 'Thinking.', replay: SIGNED } satisfies PartBody, { runId: 'r2' })
    .add(6, prompt('Thanks'))
  return pack({ history: ledger.history, rules })
}

describe('replay data through packing', () => {
  it('a part sent whole carries its replay data, whatever its kind', () => {
    const packed = chat({ version: 1 })
    expect(partAt(packed, 2).content).toMatchObject({ type: 'tool_call', replay: SIGNED })
    expect(partAt(packed, 4).content).toMatchObject({ type: 'message', replay: SIGNED_TEXT })
    expect(partAt(packed, 5).content).toMatchObject({ type: 'reasoning', replay: SIGNED })
  })

  it('a cut message or cut call arguments go without it', () => {
    const packed = chat({ version: 1, text: { message: { mode: 'always', to: 2 } }, tools: { default: { arguments: { mode: 'always', to: 2 } } } })
    const call = partAt(packed, 2)
    const message = partAt(packed, 4)
    expect([call.treatment, message.treatment]).toEqual(['truncated', 'truncated'])
    expect(call.content).not.toHaveProperty('replay')
    expect(message.content).not.toHaveProperty('replay')
    // Reasoning has no cut: it keeps its data.
    expect(partAt(packed, 5).content).toMatchObject({ replay: SIGNED })
  })
})
