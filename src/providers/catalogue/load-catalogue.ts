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
  return parseCatalogue(readCatalogueJson(file), file)
}

/** The file's JSON, or an error naming the file. */
export function readCatalogueJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new CatalogueFileError(`catalogue ${file}: cannot be read as JSON: ${(error as Error).message}`)
  }
}

/** Checks a catalogue's data (a file's, or an imported version's); `where` names it in every error. */
export function parseCatalogue(data: unknown, where: string): LoadedCatalogue {
  const file = where
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
    if ((model.max_input_tokens === null) !== (model.sources.max_input_tokens === undefined)) problems.push(`/models/${i}/sources/max_input_tokens names the source of max_input_tokens, and only then`)
    if ((model.tiers.length === 0) !== (model.sources.tiers === undefined)) problems.push(`/models/${i}/sources/tiers names the source of tiers, and only then`)
    if (model.status === 'retired' && model.retires_at === null) problems.push(`/models/${i}/retires_at is required of a retired model`)
    if (model.status === 'deprecated' && model.deprecated_at === null) problems.push(`/models/${i}/deprecated_at is required of a deprecated model`)
    if (model.status !== 'active' && model.successor === null && model.provider !== 'sandbox') problems.push(`/models/${i}/successor is required of a ${model.status} model`)
    if (model.deprecated_at !== null && model.retires_at !== null && Date.parse(model.deprecated_at) > Date.parse(model.retires_at)) problems.push(`/models/${i}/deprecated_at is after retires_at`)
    if (model.successor === model.name) problems.push(`/models/${i}/successor names the model itself`)
  })
  const names = new Set(data.models.map((m) => m.name))
  data.models.forEach((model, i) => {
    if (model.successor !== null && !names.has(model.successor)) problems.push(`/models/${i}/successor "${model.successor}" is not a model of this catalogue`)
  })
  if (problems.length > 0) throw new CatalogueFileError(`catalogue ${file}: ${problems.join('; ')}`)

  // The platform's inline limit caps every vendor's per-attachment ceiling.
  const capped = (policy: MediaPolicy): MediaPolicy => ({
    ...policy,
    max_bytes_per_attachment: Math.min(policy.max_bytes_per_attachment, data.platform_inline_limit_bytes),
  })
  const entries = data.models.map(({ media, rates, ...model }): CatalogueEntry => {
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
