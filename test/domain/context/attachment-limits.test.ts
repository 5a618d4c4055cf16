import { describe, expect, it } from 'vitest'
import type { MediaRef } from '../../../src/domain/context/context-types.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { Ledger, call, media, mediaPolicy, model, ordinalsOf, pack, partAt, prompt, result } from './context-fixtures.ts'

const ALL = ['image/png', 'image/jpeg', 'application/pdf', 'text/plain']
const limitWhy = (limit: number) => `over the model's limit of ${limit} attachments per request in this carrier`
const limitMessage = (limit: number) => `the model takes at most ${limit} attachments per request here; older ones are sent as markers`
const marker = (m: MediaRef, why: string) => `[attachment ${m.filename} (${m.mime}, ${m.byteLen} bytes) not sent: ${why}]`

const p1 = media('p1.png', 'image/png', 100)
const p2 = media('p2.png', 'image/png', 200)
const j3 = media('j3.jpg', 'image/jpeg', 300)
const p3 = media('p3.png', 'image/png', 301)
const p4 = media('p4.png', 'image/png', 400)

const attachmentKinds = (packed: ReturnType<typeof pack>) =>
  packed.parts.map((p) => [p.ordinal, p.content && 'attachments' in p.content ? p.content.attachments.map((a) => a.kind) : null])

describe('max_attachments_per_request across the whole packed context', () => {
  const history = () =>
    new Ledger()
      .add(1, prompt('a'), { media: [p1] })
      .add(2, prompt('b'), { media: [p2] })
      .add(3, prompt('c'), { media: [j3, p3] }).history
  const newParts = [{ body: prompt('d'), media: [p4] }]

  it('turns the oldest attachments over the limit into markers, each with a warning', () => {
    // 5 prompt attachments, limit 2: p1, p2 and j3 (the older of ordinal 3's two) become markers.
    const packed = pack({ history: history(), newParts, model: model(1_000, { user: mediaPolicy(ALL, 2) }) })
    expect(attachmentKinds(packed)).toEqual([
      [1, ['marker']],
      [2, ['marker']],
      [3, ['marker', 'file']],
      [-1, ['file']],
    ])
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'truncated', content: { text: 'a', attachments: [{ kind: 'marker', media: p1, text: marker(p1, limitWhy(2)) }] } })
    expect(partAt(packed, 3).content).toMatchObject({ attachments: [{ kind: 'marker', text: marker(j3, limitWhy(2)) }, { kind: 'file', media: p3 }] })
    expect(packed.warnings.translation).toEqual([
      { code: 'attachment_replaced_by_marker', message: limitMessage(2), details: { ordinal: 1, mime: 'image/png', limit: 2 } },
      { code: 'attachment_replaced_by_marker', message: limitMessage(2), details: { ordinal: 2, mime: 'image/png', limit: 2 } },
      { code: 'attachment_replaced_by_marker', message: limitMessage(2), details: { ordinal: 3, mime: 'image/jpeg', limit: 2 } },
    ])
    // The manifest counts the markers as sent: 'a' + its marker, and so on.
    expect(partAt(packed, 1).tokens).toBe(estimateTokens('a') + estimateTokens(marker(p1, limitWhy(2))))
  })

  it('leaves everything alone at the limit', () => {
    const packed = pack({ history: history(), newParts, model: model(1_000, { user: mediaPolicy(ALL, 5) }) })
    expect(attachmentKinds(packed)).toEqual([
      [1, ['file']],
      [2, ['file']],
      [3, ['file', 'file']],
      [-1, ['file']],
    ])
    expect(packed.warnings.translation).toEqual([])
  })

  it('counts each carrier on its own: tool results against tool_result, prompts against user', () => {
    const h = new Ledger()
      .add(1, prompt('a'), { media: [p1] })
      .add(2, call('c1', 'cam', '{}'), { runId: 'r1' })
      .add(3, result('c1', 'cam', 'shot'), { runId: 'r2', media: [p2, p3] })
      .add(4, prompt('b'), { media: [p4] }).history
    const packed = pack({ history: h, model: model(1_000, { user: mediaPolicy(ALL, 2), tool_result: mediaPolicy(ALL, 1) }) })
    // Prompts: 2 attachments, limit 2. Tool results: 2, limit 1: p2 becomes a marker.
    expect(attachmentKinds(packed)).toEqual([
      [1, ['file']],
      [2, null],
      [3, ['marker', 'file']],
      [4, ['file']],
    ])
    expect(packed.warnings.translation).toEqual([
      { code: 'attachment_replaced_by_marker', message: limitMessage(1), details: { ordinal: 3, mime: 'image/png', limit: 1 } },
    ])
  })

  it('does not count attachments already replaced by the retention rules', () => {
    // media default 0: only the newest history part (3) keeps its files; 2 + 1 new = 3 sent, limit 3.
    const packed = pack({ history: history(), newParts, rules: { version: 1, media: { default: 0 } }, model: model(1_000, { user: mediaPolicy(ALL, 3) }) })
    expect(attachmentKinds(packed)).toEqual([
      [1, ['marker']],
      [2, ['marker']],
      [3, ['file', 'file']],
      [-1, ['file']],
    ])
    expect(packed.warnings.translation).toEqual([])
  })

  it('drops what the markers pushed over the history budget, and counts only what is sent', () => {
    // Limit 1: the history's 4-byte text file (1 token) becomes a marker far larger than the 5 tokens left.
    const tiny = media('t.txt', 'text/plain', 4)
    const h = new Ledger().add(1, prompt('a'), { media: [tiny] }).history
    const current = estimateTokens('b') + 1
    const packed = pack({ history: h, newParts: [{ body: prompt('b'), media: [tiny] }], model: model(current + 5, { user: mediaPolicy(ALL, 1) }) })
    expect(ordinalsOf(packed)).toEqual([-1])
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 1, end_ordinal: 1 })
    expect(packed.context.tokens).toMatchObject({ history: 0, current, total: current })
    expect(packed.estimatedTokens).toBe(current)
    expect(packed.warnings.translation).toEqual([])
  })
})

describe('attachments the model cannot take', () => {
  const pdf = media('r.pdf', 'application/pdf', 1_000)
  const big = media('big.png', 'image/png', 2_048)

  it('become markers with a warning: a MIME type it does not take, a file larger than it takes', () => {
    const h = new Ledger().add(1, prompt('a'), { media: [pdf] }).add(2, prompt('b'), { media: [big] }).history
    const user = { mime_types: ['image/png'], max_bytes_per_attachment: 1_000 }
    const packed = pack({ history: h, model: model(1_000, { user }) })
    expect(partAt(packed, 1)).toMatchObject({
      treatment: 'truncated',
      content: { attachments: [{ kind: 'marker', text: marker(pdf, 'the model does not take application/pdf here') }] },
    })
    expect(partAt(packed, 2).content).toMatchObject({ attachments: [{ kind: 'marker', text: marker(big, 'it is larger than the model takes') }] })
    expect(packed.warnings.translation).toEqual([
      { code: 'attachment_replaced_by_marker', message: 'the model does not take application/pdf here', details: { ordinal: 1, mime: 'application/pdf' } },
      { code: 'attachment_replaced_by_marker', message: 'it is larger than the model takes', details: { ordinal: 2, mime: 'image/png' } },
    ])
  })

  it('in the current exchange too', () => {
    const packed = pack({ history: new Ledger().history, newParts: [{ body: prompt('a'), media: [pdf] }], model: model(1_000, { user: mediaPolicy(['image/png']) }) })
    expect(packed.parts[0]!.content).toMatchObject({ attachments: [{ kind: 'marker', text: marker(pdf, 'the model does not take application/pdf here') }] })
    expect(packed.warnings.translation).toEqual([
      { code: 'attachment_replaced_by_marker', message: 'the model does not take application/pdf here', details: { ordinal: -1, mime: 'application/pdf' } },
    ])
  })

  it('an attachment the retention rules already replaced gets no model warning', () => {
    const h = new Ledger().add(1, prompt('a'), { media: [pdf] }).add(2, prompt('b')).history
    const packed = pack({ history: h, rules: { version: 1, media: { default: 0 } }, model: model(1_000, { user: mediaPolicy(['image/png']) }) })
    expect(partAt(packed, 1).content).toMatchObject({
      attachments: [{ kind: 'marker', text: marker(pdf, 'older than the retention policy replays attachments') }],
    })
    expect(packed.warnings.translation).toEqual([])
  })
})
