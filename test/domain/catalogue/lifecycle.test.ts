import { describe, expect, it } from 'vitest'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { resolveModelForTurn, retiredMessage, statusAt, successorChain, versionInForce } from '../../../src/domain/catalogue/lifecycle.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'

const ECHO = loadCatalogue().entries.find((e) => e.name === 'sandbox/echo')!
const model = (name: string, life: Partial<Pick<CatalogueEntry, 'status' | 'deprecated_at' | 'retires_at' | 'successor'>>): CatalogueEntry => ({
  ...ECHO,
  id: name,
  name,
  status: 'active',
  deprecated_at: null,
  retires_at: null,
  successor: null,
  ...life,
})
const at = (iso: string) => new Date(iso)

describe('statusAt: no model past its retires_at is active', () => {
  const m = model('v/a', { status: 'active', deprecated_at: '2026-06-01T00:00:00Z', retires_at: '2026-12-01T00:00:00Z', successor: 'v/b' })

  it('follows the clock through deprecation and retirement, whatever the file says', () => {
    expect(statusAt(m, at('2026-05-31T23:59:59Z'))).toBe('active')
    expect(statusAt(m, at('2026-06-01T00:00:00Z'))).toBe('deprecated')
    expect(statusAt(m, at('2026-11-30T23:59:59Z'))).toBe('deprecated')
    expect(statusAt(m, at('2026-12-01T00:00:00Z'))).toBe('retired')
    expect(statusAt({ ...m, status: 'deprecated' }, at('2026-12-01T00:00:00Z'))).toBe('retired')
  })

  it('keeps a status the file set ahead of its dates', () => {
    expect(statusAt({ ...m, status: 'deprecated' }, at('2026-01-01T00:00:00Z'))).toBe('deprecated')
    expect(statusAt({ ...m, status: 'retired' }, at('2026-01-01T00:00:00Z'))).toBe('retired')
  })

  it('leaves a model with no dates active', () => {
    expect(statusAt(model('v/c', {}), at('2099-01-01T00:00:00Z'))).toBe('active')
  })

  it('has no shipped model past its retires_at still active or deprecated, on any day', () => {
    for (const day of ['2026-05-16', '2026-07-25', '2026-11-28', '2026-12-02']) {
      for (const e of loadCatalogue().entries) {
        if (e.retires_at !== null && Date.parse(e.retires_at) <= Date.parse(day)) expect(statusAt(e, at(day)), `${e.name} on ${day}`).toBe('retired')
      }
    }
  })
})

describe('resolveModelForTurn (decision 041)', () => {
  const entries = [
    model('v/old', { status: 'retired', deprecated_at: '2026-01-01T00:00:00Z', retires_at: '2026-02-01T00:00:00Z', successor: 'v/mid' }),
    model('v/mid', { deprecated_at: '2026-03-01T00:00:00Z', retires_at: '2026-06-01T00:00:00Z', successor: 'v/new' }),
    model('v/new', {}),
  ]

  it('resolves an active model with no warning', () => {
    expect(resolveModelForTurn(entries, 'v/new', at('2026-04-01T00:00:00Z'))).toMatchObject({ kind: 'resolved', warning: null, entry: { status: 'active' } })
  })

  it('resolves a deprecated model with a warning naming its retirement and successor', () => {
    const r = resolveModelForTurn(entries, 'v/mid', at('2026-04-01T00:00:00Z'))
    expect(r).toMatchObject({ kind: 'resolved', entry: { status: 'deprecated' }, warning: { code: 'model_deprecated' } })
    if (r.kind !== 'resolved') throw new Error('unreachable')
    expect(r.warning!.message).toContain('2026-06-01T00:00:00Z')
    expect(r.warning!.message).toContain('v/new')
  })

  it('refuses a retired model, naming the first successor not itself retired', () => {
    expect(resolveModelForTurn(entries, 'v/old', at('2026-04-01T00:00:00Z'))).toEqual({ kind: 'retired', name: 'v/old', retiredAt: '2026-02-01T00:00:00Z', successor: 'v/mid' })
    // Once v/mid has retired too, the chain skips it.
    expect(resolveModelForTurn(entries, 'v/old', at('2026-07-01T00:00:00Z'))).toMatchObject({ kind: 'retired', successor: 'v/new' })
    expect(retiredMessage({ name: 'v/old', retiredAt: '2026-02-01T00:00:00Z', successor: 'v/new' })).toBe('"v/old" was retired at 2026-02-01T00:00:00Z; use its successor "v/new"')
  })

  it('answers unknown for a name not in the catalogue', () => {
    expect(resolveModelForTurn(entries, 'v/none', at('2026-04-01T00:00:00Z'))).toEqual({ kind: 'unknown', name: 'v/none' })
  })

  it('stops on a successor loop', () => {
    const loop = [
      model('v/x', { status: 'retired', retires_at: '2026-01-01T00:00:00Z', successor: 'v/y' }),
      model('v/y', { status: 'retired', retires_at: '2026-01-01T00:00:00Z', successor: 'v/x' }),
    ]
    expect(successorChain(loop, 'v/x', at('2026-04-01T00:00:00Z'))).toBeNull()
  })
})

describe('versionInForce', () => {
  const versions = [
    { version: 0, effective_at: '1970-01-01T00:00:00.000Z' },
    { version: 1, effective_at: '2026-12-01T00:00:00.000Z' },
    { version: 2, effective_at: '2026-11-01T00:00:00.000Z' },
  ]
  it('takes the latest version whose effective time has come', () => {
    expect(versionInForce(versions, at('2026-10-31T00:00:00Z'))!.version).toBe(0)
    expect(versionInForce(versions, at('2026-11-15T00:00:00Z'))!.version).toBe(2)
    expect(versionInForce(versions, at('2026-12-01T00:00:00Z'))!.version).toBe(1)
    expect(versionInForce([], at('2026-12-01T00:00:00Z'))).toBeNull()
  })
})
