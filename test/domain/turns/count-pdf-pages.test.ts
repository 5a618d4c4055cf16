import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { countPdfPages } from '../../../src/domain/turns/count-pdf-pages.ts'

const pdf = (body: string) => new TextEncoder().encode(`%PDF-1.7\n${body}\n%%EOF\n`)
const page = (n: number, spacing = ' ') => `${n} 0 obj\n<</Type${spacing}/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>\nendobj\n`

describe('countPdfPages', () => {
  test('counts page objects, not the page tree or names that start with Page', () => {
    const body = `1 0 obj <</Type /Catalog /Pages 2 0 R /PageLabels 9 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3>> endobj\n${page(3)}${page(4, '')}${page(5, '\r\n ')}`
    expect(countPdfPages(pdf(body))).toBe(3)
  })

  test('a page dictionary closed right after the name still counts', () => {
    expect(countPdfPages(pdf('3 0 obj <</Parent 2 0 R/Type/Page>> endobj'))).toBe(1)
  })

  test('null when no page object is visible (compressed object streams, not a PDF)', () => {
    expect(countPdfPages(pdf('1 0 obj <</Type /ObjStm /N 40 /Length 9>> stream\nx\x9c\x01\x02\nendstream endobj'))).toBeNull()
    expect(countPdfPages(new Uint8Array([0x89, 0x50, 0x4e, 0x47]))).toBeNull()
    expect(countPdfPages(new Uint8Array())).toBeNull()
  })

  test('reads a view into a larger buffer without looking outside it', () => {
    const whole = pdf(`${page(1)}${page(2)}`)
    const outer = new Uint8Array(whole.length + 200)
    outer.set(new TextEncoder().encode(page(9).repeat(5)), 0)
    outer.set(whole, 200)
    expect(countPdfPages(outer.subarray(200))).toBe(2)
  })

  test('n pages among arbitrary filler give n', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary-ascii', maxLength: 40 }).filter((s) => !s.includes('/Page') && !s.includes('/Type')), { maxLength: 12 }), (fillers) => {
        const body = fillers.map((filler, i) => `${filler}\n${page(i + 1)}`).join('')
        expect(countPdfPages(pdf(body))).toBe(fillers.length === 0 ? null : fillers.length)
      }),
      { numRuns: 300 },
    )
  })
})
