import { describe, expect, it } from 'vitest'
import { findIllFormedText, MAX_TEXT_PROBLEMS } from '../../src/domain/well-formed-text.ts'

describe('findIllFormedText', () => {
  it('passes well-formed text, pairs included, and non-strings', () => {
    expect(findIllFormedText({ a: 'plain', b: ['\u{1f600}', 1, null, true, { c: '\ud83d\ude00' }] })).toEqual([])
    expect(findIllFormedText(null)).toEqual([])
    expect(findIllFormedText('ok')).toEqual([])
  })

  it('points at each lone surrogate, high or low, at the start, middle or end, in document order', () => {
    const body = { 'a/b': '\ud800x', list: ['ok', 'x\udc00', { 'm~n': 'end\ud83d' }], z: '\ude00\ud800' }
    expect(findIllFormedText(body).map((p) => p.pointer)).toEqual(['/a~1b', '/list/1', '/list/2/m~0n', '/z'])
    expect(findIllFormedText('\ud800')).toEqual([expect.objectContaining({ in: 'body', pointer: '' })])
  })

  it('a reversed pair is two lone surrogates', () => {
    expect(findIllFormedText({ t: '\ude00\ud83d' })).toHaveLength(1)
  })

  it('a property name with a lone surrogate is reported at its object, and its value is not walked', () => {
    expect(findIllFormedText({ meta: { ['k\ud800']: 'v\ud800' } })).toEqual([expect.objectContaining({ pointer: '/meta', message: expect.stringContaining('property name') })])
  })

  it('lists at most MAX_TEXT_PROBLEMS, and never recurses on deep nesting', () => {
    expect(findIllFormedText(Array.from({ length: 1000 }, () => '\ud800'))).toHaveLength(MAX_TEXT_PROBLEMS)
    let deep: unknown = '\udfff'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(findIllFormedText(deep)).toHaveLength(1)
  })
})
