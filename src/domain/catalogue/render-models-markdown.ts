import type { CatalogueEntry, MediaPolicy } from './catalogue-entry.ts'

const dash = (value: string | null | undefined) => (value === undefined || value === null ? '—' : value)
const yesNo = (value: boolean) => (value ? 'yes' : 'no')
const mediaCell = (policy: MediaPolicy) => (policy.mime_types.length === 0 ? 'none' : policy.mime_types.join(', '))

/** The catalogue as the markdown document served at /v1/catalogue/models.md (docs/guide/billing-and-usage.md). */
export function renderModelsMarkdown(entries: CatalogueEntry[], markupPercent: string, pricesAsOf: string): string {
  const lines = [
    '# Models',
    '',
    `Prices are USD per million tokens and include a ${markupPercent} % markup over provider cost.`,
    `Provider prices as published on ${pricesAsOf}.`,
    'Reasoning tokens are part of output and are not billed separately. Compaction runs are billed at the same rates.',
    '',
    '| name | provider | context | max output | reasoning | tools | input | output | cache read | cache write |',
    '|---|---|---:|---:|---|---|---:|---:|---:|---:|',
    ...entries.map(
      (m) =>
        `| ${m.name} | ${m.provider} | ${m.context_window} | ${m.max_output_tokens} | ${yesNo(m.supports_reasoning)} | ${yesNo(m.supports_tools)} | ${m.rates.input} | ${m.rates.output} | ${dash(m.rates.cache_read)} | ${dash(m.rates.cache_write)} |`,
    ),
    '',
    '## Attachments',
    '',
    '| name | user messages | tool results | assistant messages | per part |',
    '|---|---|---|---|---:|',
    ...entries.map(
      (m) =>
        `| ${m.name} | ${mediaCell(m.media.user)} | ${mediaCell(m.media.tool_result)} | ${mediaCell(m.media.assistant)} | ${m.media.max_attachments_per_part} |`,
    ),
    '',
    '## Pricing conditions',
    '',
    ...pricingConditions(entries),
    '',
    '## Lifecycle',
    '',
    ...lifecycle(entries),
    '',
  ]
  return lines.join('\n')
}

/** Deprecated models with their retirement and successor (docs/decisions/041-catalogue-lifecycle.md); retired ones are not listed. */
function lifecycle(entries: CatalogueEntry[]): string[] {
  const lines = entries
    .filter((m) => m.status === 'deprecated')
    .map((m) => `- ${m.name} is deprecated${m.retires_at ? `; it retires at ${m.retires_at}` : ''}${m.successor ? `; its successor is ${m.successor}` : ''}.`)
  return lines.length > 0 ? lines : ['Every model listed is active.']
}

function pricingConditions(entries: CatalogueEntry[]): string[] {
  const lines = entries.flatMap((m) =>
    m.tiers.map((t) => {
      const range = t.max === undefined || t.max === null ? `over ${t.min}` : `from ${t.min} to ${t.max}`
      const scope = t.mode === 'cliff' ? 'the whole request is priced at' : 'tokens in this band are priced at'
      return `- ${m.name}: ${t.metric} ${range}: ${scope} input ${dash(t.input)}, output ${dash(t.output)}, cache read ${dash(t.cache_read)}, cache write ${dash(t.cache_write)} (${t.mode}).`
    }),
  )
  return lines.length > 0 ? lines : ['No model has tiered pricing.']
}
