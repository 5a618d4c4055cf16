import { diffCatalogues, renderDiff, type CatalogueDiff } from '../../domain/catalogue/catalogue-diff.ts'
import { versionInForce } from '../../domain/catalogue/lifecycle.ts'
import type { Store } from '../../store/index.ts'
import type { CatalogueVersion, CatalogueVersionSource } from './catalogue-service.ts'
import { CatalogueFileError, loadCatalogue, parseCatalogue, readCatalogueJson, type LoadedCatalogue } from './load-catalogue.ts'

/** The imported versions as the catalogue service reads them; each body parsed once (decision 041). */
export function storedCatalogueVersions(store: Pick<Store, 'catalogueVersions'>): CatalogueVersionSource {
  const parsed = new Map<number, CatalogueVersion>()
  return {
    latestVersion: () => store.catalogueVersions.latestVersion(),
    all: () =>
      store.catalogueVersions.all().map((row) => {
        let v = parsed.get(row.version)
        if (!v) {
          v = { version: row.version, effective_at: row.effective_at, loaded: parseCatalogue(JSON.parse(row.body), `catalogue version ${row.version}`) }
          parsed.set(row.version, v)
        }
        return v
      }),
  }
}

export type ImportPlan = { version: number; effective_at: string; diff: CatalogueDiff; lines: string[]; applied: boolean }

/**
 * `admin catalogue import` (decision 041): the file checked as the shipped one is, compared with the
 * version in force at the effective time, then stored as the next version and announced on the
 * updates feed in one transaction. A bad file throws a CatalogueFileError and writes nothing.
 */
export function importCatalogue(
  store: Store,
  file: string,
  options: { effectiveAt?: Date; dryRun?: boolean; base?: LoadedCatalogue } = {},
): ImportPlan {
  const now = store.now()
  const effectiveAt = options.effectiveAt ?? now
  if (effectiveAt.getTime() < now.getTime() - 60_000) {
    throw new CatalogueFileError(`catalogue ${file}: --effective-at ${effectiveAt.toISOString()} is in the past; prices already billed are never changed`)
  }
  const body = readCatalogueJson(file)
  const next = parseCatalogue(body, file)
  const base: CatalogueVersion = { version: 0, effective_at: new Date(0).toISOString(), loaded: options.base ?? loadCatalogue() }
  const versions = [base, ...storedCatalogueVersions(store).all()]
  // Compared with what would be in force just before it, and with every name ever shipped: history names them.
  const before = versionInForce(versions, effectiveAt) ?? base
  const diff = diffCatalogues(before.loaded.entries, next.entries)
  const everNamed = new Map<string, string>()
  for (const v of versions) for (const e of v.loaded.entries) everNamed.set(e.name, e.id)
  const problems: string[] = []
  for (const [name, id] of everNamed) {
    const kept = next.entries.find((e) => e.name === name)
    if (!kept) problems.push(`${name} is missing: a model once shipped stays, marked retired`)
    else if (kept.id !== id) problems.push(`${name} changed its id from ${id} to ${kept.id}: runs and usage name the id`)
  }
  if (problems.length > 0) throw new CatalogueFileError(`catalogue ${file}: ${problems.join('; ')}`)

  const effective_at = effectiveAt.toISOString()
  const lines = renderDiff(diff)
  if (options.dryRun) return { version: store.catalogueVersions.latestVersion() + 1, effective_at, diff, lines, applied: false }
  const apply = store.db.transaction(() => {
    const row = store.catalogueVersions.append({ effective_at, source: file, body: JSON.stringify(body) })
    const priced = diff.changed.some((c) => c.changes.some((f) => f.field.startsWith('rates.') || f.field === 'tiers'))
    const retiring = diff.changed.some((c) => c.changes.some((f) => f.field === 'status' || f.field === 'retires_at'))
    store.updates.publish({
      kind: 'notice',
      title: `Model catalogue version ${row.version}, in force from ${effective_at}`,
      body: [`Runs started from ${effective_at} are priced with this catalogue; runs before it keep the prices they started with.`, '', ...lines].join('\n'),
      important: priced || retiring || diff.removed.length > 0,
      version: `catalogue-${row.version}`,
    })
    return row
  })
  const row = apply.immediate()
  return { version: row.version, effective_at, diff, lines, applied: true }
}
