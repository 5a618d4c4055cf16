import { describe, expect, it } from 'vitest'
import type { RetentionRules } from '../../../src/domain/config/config-types.ts'
import type { SentAttachment } from '../../../src/domain/context/context-types.ts'
import { mimeMatches } from '../../../src/domain/context/match-pattern.ts'
import { mediaRetainFor } from '../../../src/domain/context/retention-choices.ts'
import { Ledger, call, media, model, pack, partAt, prompt, result } from './context-fixtures.ts'

const WHY = 'older than the retention policy replays attachments'

const png = media('cat.png', 'image/png', 2_048)
const jpeg = media('dog.jpg', 'image/jpeg', 4_096)
const pdf = media('report.pdf', 'application/pdf', 1_000)
const txt = media(null, 'text/plain', 400, 'notes')

/**
 * History budget 10000 (window 10000, nothing fixed). Chosen estimates, oldest first:
 * ord 1 png (newer 6000), ord 2 jpeg (5000), ord 3 pdf (4000), ord 4 text (3000), ord 5 filler 3000 (0).
 */
function ledger() {
  return new Ledger()
    .add(1, prompt('a'), { media: [png], tokens: 1_000 })
    .add(2, prompt('b'), { media: [jpeg], tokens: 1_000 })
    .add(3, prompt('c'), { media: [pdf], tokens: 1_000 })
    .add(4, prompt('d'), { media: [txt], tokens: 1_000 })
    .add(5, prompt('e'), { tokens: 3_000 })
}

function attachmentsAt(rules: RetentionRules, ordinal: number): SentAttachment[] {
  const packed = pack({ history: ledger().history, rules, model: model(10_000) })
  const content = partAt(packed, ordinal).content
  if (content?.type !== 'prompt') throw new Error('not a prompt')
  return content.attachments
}

const kinds = (rules: RetentionRules) => [1, 2, 3, 4].map((o) => attachmentsAt(rules, o).map((a) => a.kind))

describe('mimeMatches', () => {
  it('matches exact types, type/* subtypes and */* everything, case-insensitively', () => {
    expect(mimeMatches('image/png', 'image/png')).toBe(true)
    expect(mimeMatches('image/png', 'image/jpeg')).toBe(false)
    expect(mimeMatches('image/*', 'image/jpeg')).toBe(true)
    expect(mimeMatches('image/*', 'application/pdf')).toBe(false)
    expect(mimeMatches('image/*', 'imagery/png')).toBe(false)
    expect(mimeMatches('*/*', 'application/pdf')).toBe(true)
    expect(mimeMatches('IMAGE/PNG', 'image/png')).toBe(true)
  })
})

describe('mediaRetainFor', () => {
  const rules: RetentionRules['media'] = { default: 0.2, rules: [{ mime: 'image/png', retain: 1 }, { mime: 'image/*', retain: 0.5 }] }
  it('takes the first matching rule, else default, else replays all', () => {
    expect(mediaRetainFor('image/png', rules)).toBe(1)
    expect(mediaRetainFor('image/jpeg', rules)).toBe(0.5)
    expect(mediaRetainFor('application/pdf', rules)).toBe(0.2)
    expect(mediaRetainFor('application/pdf', { rules: [] })).toBe(Number.POSITIVE_INFINITY)
    expect(mediaRetainFor('application/pdf', undefined)).toBe(Number.POSITIVE_INFINITY)
  })
})

describe('media thresholds in packing', () => {
  it('the first matching rule wins: image/png before image/*, */* for the rest', () => {
    const rules: RetentionRules = {
      version: 1,
      media: { rules: [{ mime: 'image/png', retain: 1 }, { mime: 'image/*', retain: 0.5 }, { mime: '*/*', retain: 0.35 }] },
    }
    // Limits: 10000, 5000, 3500. png 6000 ≤ 10000 (image/* alone would have made it a marker);
    // jpeg 5000 ≤ 5000 (just within); pdf 4000 > 3500; text 3000 ≤ 3500.
    expect(kinds(rules)).toEqual([['file'], ['file'], ['marker'], ['file']])
  })

  it('default applies to attachments no rule matches', () => {
    const rules: RetentionRules = { version: 1, media: { default: 0.2, rules: [{ mime: 'image/*', retain: 1 }] } }
    // Images by image/* (10000); pdf 4000 and text 3000 by default 0.2 (2000): both markers.
    expect(kinds(rules)).toEqual([['file'], ['file'], ['marker'], ['marker']])
  })

  it('a zero default keeps only the newest part\'s attachments', () => {
    const rules: RetentionRules = { version: 1, media: { default: 0 } }
    expect(kinds(rules)).toEqual([['marker'], ['marker'], ['marker'], ['marker']])
    const packed = pack({ history: new Ledger().add(1, prompt('a'), { media: [png] }).history, rules, model: model(10_000) })
    expect(partAt(packed, 1).content).toMatchObject({ attachments: [{ kind: 'file', media: png }] })
  })

  it('media left out replays every attachment, and so does a media document without rules or default', () => {
    expect(kinds({ version: 1 })).toEqual([['file'], ['file'], ['file'], ['file']])
    expect(kinds({ version: 1, media: {} })).toEqual([['file'], ['file'], ['file'], ['file']])
  })

  it('a marker names the file, its MIME type and its size; an unnamed file says so', () => {
    const rules: RetentionRules = { version: 1, media: { default: 0 } }
    expect(attachmentsAt(rules, 3)).toEqual([
      { kind: 'marker', media: pdf, text: `[attachment report.pdf (application/pdf, 1000 bytes) not sent: ${WHY}]` },
    ])
    expect(attachmentsAt(rules, 4)).toEqual([{ kind: 'marker', media: txt, text: `[attachment unnamed (text/plain, 400 bytes) not sent: ${WHY}]` }])
  })

  it('works on descriptions only: a sent file is the MediaRef itself, no bytes anywhere', () => {
    const sent = attachmentsAt({ version: 1 }, 1)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.media).toBe(png)
    expect(Object.keys(sent[0]!)).toEqual(['kind', 'media'])
    expect(Object.keys(png).sort()).toEqual(['byteLen', 'filename', 'height', 'mediaId', 'mime', 'pageCount', 'width'])
  })

  it('a part whose attachment became a marker is truncated; its text is untouched', () => {
    const packed = pack({ history: ledger().history, rules: { version: 1, media: { default: 0.35 } }, model: model(10_000) })
    expect(partAt(packed, 3)).toMatchObject({ treatment: 'truncated', content: { type: 'prompt', text: 'c' } })
    expect(partAt(packed, 4)).toMatchObject({ treatment: 'verbatim', content: { type: 'prompt', text: 'd' } })
  })

  it('applies to tool results too', () => {
    const history = new Ledger()
      .add(1, call('c1', 'camera', '{}'), { runId: 'r1', tokens: 10 })
      .add(2, result('c1', 'camera', 'snapshot'), { runId: 'r2', media: [png], tokens: 10 })
      .add(3, prompt('later'), { tokens: 100 }).history
    const packed = pack({ history, rules: { version: 1, media: { rules: [{ mime: 'image/*', retain: 0.05 }] } }, model: model(1_000) })
    // Limit floor(1000 × 0.05) = 50; the result has 100 newer.
    expect(partAt(packed, 2)).toMatchObject({
      treatment: 'truncated',
      content: { type: 'tool_result', text: 'snapshot', attachments: [{ kind: 'marker', text: `[attachment cat.png (image/png, 2048 bytes) not sent: ${WHY}]` }] },
    })
  })
})
