import type { CatalogueEntry } from './catalogue-entry.ts'

export type FieldChange = { field: string; from: unknown; to: unknown }
export type CatalogueDiff = {
  added: string[]
  removed: string[]
  changed: { name: string; changes: FieldChange[] }[]
}

const COMPARED: (keyof CatalogueEntry)[] = [
  'vendor_model_id', 'display_name', 'status', 'deprecated_at', 'retires_at', 'successor', 'context_window', 'max_input_tokens',
  'max_output_tokens', 'max_request_bytes', 'long_context', 'supports_reasoning', 'max_reasoning_effort', 'supports_tools',
  'max_tool_definitions', 'thinking', 'rates', 'tiers', 'media',
]

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/** What an import changes, model by model (by public name); prices show old → new per rate. */
export function diffCatalogues(before: readonly CatalogueEntry[], after: readonly CatalogueEntry[]): CatalogueDiff {
  const old = new Map(before.map((e) => [e.name, e]))
  const next = new Map(after.map((e) => [e.name, e]))
  const diff: CatalogueDiff = { added: [], removed: [], changed: [] }
  for (const name of next.keys()) if (!old.has(name)) diff.added.push(name)
  for (const name of old.keys()) if (!next.has(name)) diff.removed.push(name)
  for (const [name, a] of old) {
    const b = next.get(name)
    if (!b) continue
    const changes: FieldChange[] = []
    for (const field of COMPARED) {
      if (field === 'rates') {
        for (const rate of ['input', 'output', 'cache_read', 'cache_write'] as const) {
          if (!same(a.rates[rate], b.rates[rate])) changes.push({ field: `rates.${rate}`, from: a.rates[rate] ?? null, to: b.rates[rate] ?? null })
        }
      } else if (!same(a[field], b[field])) changes.push({ field, from: a[field] ?? null, to: b[field] ?? null })
    }
    if (changes.length > 0) diff.changed.push({ name, changes })
  }
  return diff
}

/** The diff as lines for an operator. */
export function renderDiff(diff: CatalogueDiff): string[] {
  const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))
  const lines: string[] = []
  for (const name of diff.added) lines.push(`+ ${name}`)
  for (const name of diff.removed) lines.push(`- ${name}`)
  for (const { name, changes } of diff.changed) {
    lines.push(`~ ${name}`)
    for (const c of changes) lines.push(`    ${c.field}: ${show(c.from)} → ${show(c.to)}`)
  }
  if (lines.length === 0) lines.push('no change')
  return lines
}
