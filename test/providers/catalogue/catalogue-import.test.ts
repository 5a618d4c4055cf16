import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runAdminCommand, adminOutput, AdminError } from '../../../src/cli/admin-commands.ts'
import { importCatalogue, storedCatalogueVersions } from '../../../src/providers/catalogue/catalogue-import.ts'
import { createCatalogueService } from '../../../src/providers/catalogue/catalogue-service.ts'
import { CatalogueFileError, DEFAULT_CATALOGUE_FILE, loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'
import { createStore, type Store } from '../../../src/store/index.ts'
import { openTempStore } from '../../helpers/temp-store.ts'

type Model = Record<string, any>
const original = () => JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as { models: Model[] } & Record<string, unknown>
const NOW = new Date('2026-11-28T12:00:00Z')
const ECHO_ID = loadCatalogue().entries.find((e) => e.name === 'sandbox/echo')!.id

let t: ReturnType<typeof openTempStore>
let store: Store
let clock = NOW
beforeEach(() => {
  t = openTempStore()
  clock = NOW
  store = createStore(t.db, { now: () => clock })
})
afterEach(() => t.close())

/** A catalogue file in the test's directory: the shipped one with `change` applied. */
const fileWith = (change: (models: Model[]) => void, name = 'import.json') => {
  const data = original()
  change(data.models)
  const file = join(t.dir, name)
  writeFileSync(file, JSON.stringify(data))
  return file
}
const named = (models: Model[], name: string) => models.find((m) => m.name === name)!
const rows = () => ({
  versions: t.db.prepare('SELECT COUNT(*) AS n FROM catalogue_versions').get(),
  updates: t.db.prepare('SELECT COUNT(*) AS n FROM platform_updates').get(),
})

describe('importCatalogue', () => {
  it('shows the diff: models added, fields changed, prices old → new', () => {
    const file = fileWith((models) => {
      named(models, 'sandbox/echo').rates.input = '1.50'
      named(models, 'mistral/mistral-small-3.2').status = 'deprecated'
      named(models, 'mistral/mistral-small-3.2').deprecated_at = '2026-11-28T00:00:00Z'
      named(models, 'mistral/mistral-small-3.2').successor = 'mistral/mistral-medium-3.5'
      models.push({ ...named(models, 'sandbox/echo'), id: '0b5e1f3c-1111-4c2d-8e3f-222233334444', name: 'sandbox/echo-2m' })
    })
    const plan = importCatalogue(store, file, { dryRun: true })
    expect(plan.applied).toBe(false)
    expect(plan.diff.added).toEqual(['sandbox/echo-2m'])
    expect(plan.diff.removed).toEqual([])
    expect(plan.diff.changed.find((c) => c.name === 'sandbox/echo')!.changes).toEqual([{ field: 'rates.input', from: '1.00', to: '1.50' }])
    expect(plan.diff.changed.find((c) => c.name === 'mistral/mistral-small-3.2')!.changes.map((c) => c.field)).toEqual(['status', 'deprecated_at', 'successor'])
    expect(plan.lines).toContain('    rates.input: 1.00 → 1.50')
    expect(rows()).toEqual({ versions: { n: 0 }, updates: { n: 0 } })
  })

  it('applies the version and its announcement together, and the service takes it up without a restart', () => {
    const service = createCatalogueService(loadCatalogue(), new Set(['sandbox']), () => new Map(), () => clock, storedCatalogueVersions(store))
    expect(service.findByName('sandbox/echo')!.rates.input).toBe('1.00')
    const plan = importCatalogue(store, fileWith((models) => (named(models, 'sandbox/echo').rates.input = '1.50')))
    expect(plan).toMatchObject({ applied: true, version: 1, effective_at: NOW.toISOString() })
    expect(rows()).toEqual({ versions: { n: 1 }, updates: { n: 1 } })
    const [update] = store.updates.list()
    expect(update).toMatchObject({ kind: 'notice', important: true, version: 'catalogue-1' })
    expect(update!.body).toContain('rates.input: 1.00 → 1.50')
    service.checkVersion()
    expect(service.findByName('sandbox/echo')!.rates.input).toBe('1.50')
    expect(service.version).toBe(1)
  })

  it('prices by date: a future effective time changes nothing before it and applies after it', () => {
    const service = createCatalogueService(loadCatalogue(), new Set(['sandbox']), () => new Map(), () => clock, storedCatalogueVersions(store))
    const from = new Date('2026-12-01T00:00:00Z')
    importCatalogue(store, fileWith((models) => (named(models, 'sandbox/echo').rates.output = '4.00')), { effectiveAt: from })
    service.checkVersion()
    expect(service.findByName('sandbox/echo')!.rates.output).toBe('2.00')
    expect(service.pricesAt(ECHO_ID, new Date('2026-11-30T23:59:59Z'))!.rates.output).toBe('2.00')
    expect(service.pricesAt(ECHO_ID, from)!.rates.output).toBe('4.00')
    clock = new Date('2026-12-01T00:00:01Z')
    expect(service.findByName('sandbox/echo')!.rates.output).toBe('4.00')
  })

  it('refuses a bad file with a clear error naming it, and changes nothing', () => {
    const before = rows()
    const bad = fileWith((models) => (named(models, 'xai/grok-4').successor = 'xai/grok-9'))
    expect(() => importCatalogue(store, bad)).toThrow(CatalogueFileError)
    expect(() => importCatalogue(store, bad)).toThrow(new RegExp(`${bad}.*successor "xai/grok-9" is not a model of this catalogue`))
    const notJson = join(t.dir, 'broken.json')
    writeFileSync(notJson, '{"models": [')
    expect(() => importCatalogue(store, notJson)).toThrow(/cannot be read as JSON/)
    expect(rows()).toEqual(before)
  })

  it('refuses a file that drops a model once shipped, or renumbers one: history names them', () => {
    const dropped = fileWith((models) => models.splice(models.indexOf(named(models, 'xai/grok-4')), 1))
    expect(() => importCatalogue(store, dropped)).toThrow(/xai\/grok-4 is missing: a model once shipped stays, marked retired/)
    const renumbered = fileWith((models) => (named(models, 'sandbox/echo').id = '0b5e1f3c-1111-4c2d-8e3f-222233334444'))
    expect(() => importCatalogue(store, renumbered)).toThrow(/sandbox\/echo changed its id/)
    expect(rows()).toEqual({ versions: { n: 0 }, updates: { n: 0 } })
  })

  it('refuses an effective time in the past', () => {
    expect(() => importCatalogue(store, fileWith(() => {}), { effectiveAt: new Date('2026-11-01T00:00:00Z') })).toThrow(/in the past/)
  })
})

describe('admin catalogue import', () => {
  it('prints the diff, then what it did; --dry-run writes nothing', () => {
    const file = fileWith((models) => (named(models, 'sandbox/echo').rates.input = '1.25'))
    const dry = adminOutput(store, ['catalogue', 'import', file, '--dry-run'])
    expect(dry).toContain('~ sandbox/echo\n    rates.input: 1.00 → 1.25')
    expect(rows().versions).toEqual({ n: 0 })
    expect(runAdminCommand(store, ['catalogue', 'import', file, '--effective-at', '2026-12-01'])).toMatchObject({ applied: true, version: 1, effective_at: '2026-12-01T00:00:00.000Z' })
    expect(rows().versions).toEqual({ n: 1 })
  })

  it('answers a bad file with an AdminError naming it', () => {
    const bad = fileWith((models) => delete named(models, 'sandbox/echo').status)
    expect(() => runAdminCommand(store, ['catalogue', 'import', bad])).toThrow(AdminError)
    expect(() => runAdminCommand(store, ['catalogue', 'import', bad])).toThrow(new RegExp(bad))
    expect(rows().versions).toEqual({ n: 0 })
  })
})
