import { describe, expect, it } from 'vitest'
import { contextTooLargeError } from '../../../src/domain/context/context-overflow.ts'
import type { MediaRef } from '../../../src/domain/context/context-types.ts'
import { packContext, packContextOrOverflow, type PackInput } from '../../../src/domain/context/pack-context.ts'
import { REQUEST_ENVELOPE_BYTES, renderedBytes } from '../../../src/domain/context/request-bytes.ts'
import { ContextTooLargeError } from '../../../src/domain/errors.ts'
import { BUDGET, Ledger, NO_RULES, media, model, pack, partAt, prompt } from './context-fixtures.ts'

/** Decision 045: a request's bytes stay within the vendor's limit; past it, the oldest attachments are markers. */

const MB = 1_000_000
const image = (n: number) => media(`p${n}.png`, 'image/png', MB)
const why = "left out of this request to keep it within the vendor's request size limit"
const marker = (m: MediaRef) => `[attachment ${m.filename} (${m.mime}, ${m.byteLen} bytes) not sent: ${why}]`

/** Four turns, each a prompt with a 1 MB image; the new turn brings a fifth. */
const history = () => {
  const ledger = new Ledger()
  for (let n = 1; n <= 4; n++) ledger.add(n, prompt(`look at picture ${n}`), { media: [image(n)] })
  return ledger.history
}
const newParts = [{ body: prompt('and this one'), media: [image(5)] }]
// Room for three images inline (4/3 of a megabyte each, in base64) and the texts, not four.
const LIMIT = REQUEST_ENVELOPE_BYTES + 4_100_000

const kinds = (packed: ReturnType<typeof pack>) =>
  packed.parts.map((p) => [p.ordinal, p.content && 'attachments' in p.content ? p.content.attachments.map((a) => a.kind) : null])
/** The bytes the packed parts weigh as request-bytes.ts bounds them, with the request's envelope. */
const requestBytesOf = (packed: ReturnType<typeof pack>) => REQUEST_ENVELOPE_BYTES + packed.parts.reduce((n, p) => n + (p.content ? renderedBytes(p.content) : 0), 0)

describe("packing within the vendor's request size", () => {
  it('leaves out the oldest attachments first, each a marker, and keeps the request within the limit', () => {
    const packed = pack({ history: history(), newParts, model: model(100_000, {}, LIMIT) })
    expect(kinds(packed)).toEqual([
      [1, ['marker']],
      [2, ['marker']],
      [3, ['file']],
      [4, ['file']],
      [-1, ['file']],
    ])
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'truncated', content: { attachments: [{ kind: 'marker', text: marker(image(1)) }] } })
    expect(requestBytesOf(packed)).toBeLessThanOrEqual(LIMIT)
    // Without the limit, all five would be sent: past it.
    const unbounded = pack({ history: history(), newParts, model: model(100_000, {}, 100 * MB) })
    expect(kinds(unbounded).every(([, k]) => k === null || (k as string[]).every((a) => a === 'file'))).toBe(true)
    expect(requestBytesOf(unbounded)).toBeGreaterThan(LIMIT)
  })

  it('lists each attachment left out in the manifest, and warns of each', () => {
    const packed = pack({ history: history(), newParts, model: model(100_000, {}, LIMIT) })
    expect(packed.context.attachments_left_out).toEqual([
      { ordinal: 1, media_id: 'p1.png', mime: 'image/png', byte_len: MB, reason: 'request_bytes', max_request_bytes: LIMIT },
      { ordinal: 2, media_id: 'p2.png', mime: 'image/png', byte_len: MB, reason: 'request_bytes', max_request_bytes: LIMIT },
    ])
    expect(packed.warnings.translation).toEqual(
      [1, 2].map((ordinal) => ({
        code: 'attachment_replaced_by_marker',
        message: `the model's vendor takes requests of at most ${LIMIT} bytes, attachments inline in base64; older ones are sent as markers`,
        details: { ordinal, mime: 'image/png', max_request_bytes: LIMIT },
      })),
    )
    // The markers cost tokens as sent, and the manifest counts them.
    expect(packed.context.segments.find((s) => s.first_ordinal === 1)).toMatchObject({ treatment: 'truncated' })
  })

  it('within the limit, nothing is left out and the manifest says so', () => {
    const packed = pack({ history: history(), newParts, model: model(100_000, {}, 100 * MB) })
    expect(packed.context.attachments_left_out).toEqual([])
    expect(packed.warnings.translation).toEqual([])
  })

  it("keeps what it left out as the chat grows (renderings stay kept): the next turn moves the line by one", () => {
    const h = history()
    const m = model(100_000, {}, LIMIT)
    pack({ history: h, newParts, model: m })
    h.append({ ordinal: 5, kind: 'prompt', runId: null, toolUseId: null, tokens: 10, media: [image(5)], body: prompt('and this one'), renders: null })
    const next = pack({ history: h, newParts: [{ body: prompt('a sixth'), media: [image(6)] }], model: m })
    expect(next.context.attachments_left_out.map((a) => a.ordinal)).toEqual([1, 2, 3])
    expect(requestBytesOf(next)).toBeLessThanOrEqual(LIMIT)
  })

  it("refuses a turn whose own attachments alone pass the limit: context_too_large, nothing packed", () => {
    const own = [{ body: prompt('two big ones'), media: [media('a.png', 'image/png', 2 * MB), media('b.png', 'image/png', 2 * MB)] }]
    const input: PackInput = { history: history(), newParts: own, currentRuns: [], instructionsTokens: 0, toolsTokens: 0, rules: NO_RULES, budget: BUDGET, model: model(100_000, {}, LIMIT) }
    const result = packContextOrOverflow(input)
    expect(result.kind).toBe('too-large')
    if (result.kind !== 'too-large') return
    expect(result.overflow.requestBytes!.limit).toBe(LIMIT)
    expect(result.overflow.requestBytes!.fixed).toBeGreaterThan(LIMIT)
    const error = contextTooLargeError(result.overflow)
    expect(error.code).toBe('context_too_large')
    expect(error.message).toMatch(/over the model's limit of \d+ bytes per request/)
    expect(() => packContext({ ...input, history: history() })).toThrow(ContextTooLargeError)
  })

  it('counts the instructions and tools against the limit', () => {
    const packed = pack({ history: history(), newParts, model: model(100_000, {}, LIMIT), instructionsAndToolsBytes: 1_400_000 })
    expect(packed.context.attachments_left_out.map((a) => a.ordinal)).toEqual([1, 2, 3])
  })
})
