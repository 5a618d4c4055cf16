import type { CatalogueEntry, ModelStatus } from './catalogue-entry.ts'

/**
 * A model's lifecycle against the clock (docs/decisions/041-catalogue-lifecycle.md): no model past its
 * `retires_at` is active or deprecated, whatever the file says; a model past its `deprecated_at` is at
 * least deprecated.
 */
export function statusAt(
  model: Pick<CatalogueEntry, 'status' | 'deprecated_at' | 'retires_at'>,
  now: Date,
): ModelStatus {
  const t = now.getTime()
  if (model.status === 'retired') return 'retired'
  if (model.retires_at != null && Date.parse(model.retires_at) <= t) return 'retired'
  if (model.status === 'deprecated') return 'deprecated'
  if (model.deprecated_at != null && Date.parse(model.deprecated_at) <= t) return 'deprecated'
  return 'active'
}

export type DeprecationWarning = { code: 'model_deprecated'; message: string; details: Record<string, unknown> }

/** The warning a turn on a deprecated model carries (decision 041): when it retires and what follows it. */
export function deprecationWarning(entry: Pick<CatalogueEntry, 'name' | 'retires_at' | 'successor'>): DeprecationWarning {
  return {
    code: 'model_deprecated',
    message:
      `${entry.name} is deprecated` +
      (entry.retires_at ? ` and retires at ${entry.retires_at}` : '') +
      (entry.successor ? `; its successor is ${entry.successor}` : ''),
    details: { model: entry.name, retires_at: entry.retires_at, successor: entry.successor },
  }
}

export type TurnModelResolution =
  | { kind: 'resolved'; entry: CatalogueEntry; warning: DeprecationWarning | null }
  | { kind: 'retired'; name: string; retiredAt: string | null; successor: string | null }
  | { kind: 'unknown'; name: string }

/**
 * What a turn, a configuration or a budget naming `name` gets (decision 041): an active model; a
 * deprecated one with a warning naming its retirement and successor; a retired one is refused with its
 * successor named, never swapped in silently.
 */
export function resolveModelForTurn(entries: readonly CatalogueEntry[], name: string, now: Date): TurnModelResolution {
  const entry = entries.find((e) => e.name === name)
  if (!entry) return { kind: 'unknown', name }
  const status = statusAt(entry, now)
  switch (status) {
    case 'active':
      return { kind: 'resolved', entry: { ...entry, status }, warning: null }
    case 'deprecated':
      return { kind: 'resolved', entry: { ...entry, status }, warning: deprecationWarning(entry) }
    case 'retired':
      return { kind: 'retired', name, retiredAt: entry.retires_at, successor: successorChain(entries, entry.name, now) }
    default: {
      const never: never = status
      throw new Error(`unknown status ${String(never)}`)
    }
  }
}

/** The refusal's words for a retired model: when it retired and the name to use instead. */
export function retiredMessage(r: { name: string; retiredAt: string | null; successor: string | null }): string {
  return `"${r.name}" was retired${r.retiredAt ? ` at ${r.retiredAt}` : ''}` + (r.successor ? `; use its successor "${r.successor}"` : '; it has no successor in the catalogue')
}

/** The first model down the successor chain that is not retired at `now`; null where the chain ends retired. */
export function successorChain(entries: readonly CatalogueEntry[], name: string, now: Date): string | null {
  const byName = new Map(entries.map((e) => [e.name, e]))
  const seen = new Set<string>([name])
  let next = byName.get(name)?.successor ?? null
  while (next !== null && !seen.has(next)) {
    seen.add(next)
    const entry = byName.get(next)
    if (!entry) return null
    if (statusAt(entry, now) !== 'retired') return entry.name
    next = entry.successor
  }
  return null
}

/** The catalogue version in force at `at`: the latest whose `effective_at` is not after it; null before the first. */
export function versionInForce<V extends { effective_at: string; version: number }>(versions: readonly V[], at: Date): V | null {
  let best: V | null = null
  for (const v of versions) {
    if (Date.parse(v.effective_at) > at.getTime()) continue
    if (best === null || Date.parse(v.effective_at) > Date.parse(best.effective_at) || (v.effective_at === best.effective_at && v.version > best.version)) best = v
  }
  return best
}
