import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { CatalogueEntry, MediaPolicy } from '../../domain/catalogue/catalogue-entry.ts'
import { CatalogueFile } from './catalogue-file.ts'

export const DEFAULT_CATALOGUE_FILE = resolve(import.meta.dirname, '../../../catalogue/models.json')
export const MAX_ATTACHMENTS_PER_PART = 20

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

export class CatalogueFileError extends Error {}

export type LoadedCatalogue = { pricesAsOf: string; entries: CatalogueEntry[] }

/** Reads and checks the catalogue file; any problem stops start-up with a message naming where it is. */
export function loadCatalogue(file = DEFAULT_CATALOGUE_FILE): LoadedCatalogue {
  let data: unknown
  try {
    data = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new CatalogueFileError(`catalogue ${file}: cannot be read as JSON: ${(error as Error).message}`)
  }
  const validate = addFormats(new Ajv({ allErrors: true, strict: false })).compile<CatalogueFile>(CatalogueFile)
  if (!validate(data)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')
    throw new CatalogueFileError(`catalogue ${file}: ${problems}`)
  }
  const problems: string[] = []
  const seen = new Set<string>()
  data.models.forEach((model, i) => {
    if (!data.media_profiles[model.media]) problems.push(`/models/${i}/media names no media profile "${model.media}"`)
    for (const key of [model.id, model.name]) {
      if (seen.has(key)) problems.push(`/models/${i} repeats ${key}`)
      seen.add(key)
    }
    if (!model.name.startsWith(`${model.provider}/`)) problems.push(`/models/${i}/name must start with "${model.provider}/"`)
    if (model.max_input_tokens !== null && model.max_input_tokens > model.context_window) problems.push(`/models/${i}/max_input_tokens exceeds context_window`)
    if (model.long_context && model.long_context.standard_window >= model.context_window) problems.push(`/models/${i}/long_context/standard_window must be below context_window`)
    if ((model.max_input_tokens === null) !== (model.limits_source.max_input_tokens === undefined)) problems.push(`/models/${i}/limits_source/max_input_tokens names the source of max_input_tokens, and only then`)
  })
  if (problems.length > 0) throw new CatalogueFileError(`catalogue ${file}: ${problems.join('; ')}`)

  // The platform's inline limit caps every vendor's per-attachment ceiling.
  const capped = (policy: MediaPolicy): MediaPolicy => ({
    ...policy,
    max_bytes_per_attachment: Math.min(policy.max_bytes_per_attachment, data.platform_inline_limit_bytes),
  })
  const entries = data.models.map(({ media, rates, limits_source: _sources, ...model }): CatalogueEntry => {
    const profile = data.media_profiles[media]!
    return {
      ...model,
      rates: { ...rates, currency: data.currency },
      media: {
        user: capped(profile.user),
        tool_result: capped(profile.tool_result),
        assistant: capped(profile.assistant),
        max_attachments_per_part: MAX_ATTACHMENTS_PER_PART,
        configured: true,
      },
    }
  })
  return { pricesAsOf: data.prices_as_of, entries }
}
