import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  CatalogueFileError,
  DEFAULT_CATALOGUE_FILE,
  loadCatalogue,
  MAX_ATTACHMENTS_PER_PART,
} from '../../../src/providers/catalogue/load-catalogue.ts'

const MIB_20 = 20 * 1024 * 1024
const VENDORS = ['anthropic', 'openai', 'google', 'mistral', 'xai', 'deepseek']
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const RATE = /^\d+(\.\d+)?$/

describe('loadCatalogue on catalogue/models.json', () => {
  const loaded = loadCatalogue()

  it('loads the 23 models of the six vendors and the sandbox', () => {
    expect(loaded.entries).toHaveLength(23)
    expect(new Set(loaded.entries.map((m) => m.provider))).toEqual(new Set([...VENDORS, 'sandbox']))
    expect(loaded.pricesAsOf).toMatch(/^\d{4}-\d{2}-\d{2}$/)
  })

  it('has at least two models per vendor, and exactly the sandbox models of decisions §6 and issue 35 (sandbox/agent)', () => {
    for (const vendor of VENDORS) {
      expect(loaded.entries.filter((m) => m.provider === vendor).length, vendor).toBeGreaterThanOrEqual(2)
    }
    const sandbox = loaded.entries.filter((m) => m.provider === 'sandbox')
    expect(sandbox.map((m) => m.name).sort()).toEqual(['sandbox/agent', 'sandbox/echo', 'sandbox/echo-1m', 'sandbox/echo-8k'])
    expect(sandbox.find((m) => m.name === 'sandbox/agent')!.context_window).toBe(128_000)
    expect(sandbox.find((m) => m.name === 'sandbox/echo')!.context_window).toBe(128_000)
    expect(sandbox.find((m) => m.name === 'sandbox/echo-8k')!.context_window).toBe(8_192)
    expect(sandbox.find((m) => m.name === 'sandbox/echo-1m')!.context_window).toBe(1_000_000)
  })

  it('gives every model a unique id and a public name prefixed by its provider', () => {
    expect(new Set(loaded.entries.map((m) => m.id)).size).toBe(23)
    expect(new Set(loaded.entries.map((m) => m.name)).size).toBe(23)
    for (const m of loaded.entries) {
      expect(m.id, m.name).toMatch(UUID)
      expect(m.name.startsWith(`${m.provider}/`), m.name).toBe(true)
      expect(m.vendor_model_id.length, m.name).toBeGreaterThan(0)
    }
  })

  it('caps every media ceiling at the 20 MiB platform inline limit', () => {
    for (const m of loaded.entries) {
      for (const carrier of ['user', 'tool_result', 'assistant'] as const) {
        const policy = m.media[carrier]
        expect(policy.max_bytes_per_attachment, `${m.name} ${carrier}`).toBeLessThanOrEqual(MIB_20)
        expect(policy.max_bytes_per_attachment, `${m.name} ${carrier}`).toBeGreaterThanOrEqual(0)
        // An unsupported carrier has an empty MIME list (spec §2.7).
        if (policy.mime_types.length === 0) expect(policy.max_bytes_per_attachment).toBe(0)
      }
      expect(m.media.max_attachments_per_part).toBe(20)
      expect(m.media.configured).toBe(true)
    }
    expect(MAX_ATTACHMENTS_PER_PART).toBe(20)
  })

  it('gives the sandbox images, PDF and text in every carrier (decisions §6)', () => {
    for (const m of loaded.entries.filter((e) => e.provider === 'sandbox')) {
      for (const carrier of ['user', 'tool_result', 'assistant'] as const) {
        expect(m.media[carrier].mime_types).toEqual(expect.arrayContaining(['image/png', 'image/jpeg', 'application/pdf', 'text/plain']))
      }
    }
  })

  it('prices in USD with decimal strings and the sandbox prices of decisions §6', () => {
    for (const m of loaded.entries) {
      expect(m.rates.currency).toBe('USD')
      expect(m.rates.input, m.name).toMatch(RATE)
      expect(m.rates.output, m.name).toMatch(RATE)
      for (const rate of [m.rates.cache_read, m.rates.cache_write]) if (rate !== null && rate !== undefined) expect(rate).toMatch(RATE)
    }
    for (const name of ['sandbox/echo', 'sandbox/echo-1m']) {
      expect(loaded.entries.find((m) => m.name === name)!.rates).toMatchObject({ input: '1.00', output: '2.00', cache_read: '0.10' })
    }
  })

  it('includes the real long-context cliff tiers of Gemini 2.5 Pro over 200k and GPT-5.5 over 272k', () => {
    for (const [name, min] of [['google/gemini-2.5-pro', 200_000], ['openai/gpt-5.5', 272_000], ['sandbox/echo-1m', 200_000]] as const) {
      const tiers = loaded.entries.find((m) => m.name === name)!.tiers
      expect(tiers, name).toContainEqual(expect.objectContaining({ metric: 'context_tokens', mode: 'cliff', min }))
    }
    // Sonnet 4.5's 1M beta header was withdrawn: 200k, no long context, no tier (issue 33).
    expect(loaded.entries.find((m) => m.name === 'anthropic/claude-sonnet-4.5')).toMatchObject({ context_window: 200_000, long_context: null, tiers: [] })
    expect(loaded.entries.find((m) => m.name === 'sandbox/echo')!.tiers).toEqual([])
  })

  it('gives every model a lifecycle, a request byte limit and a dated source for every figure', () => {
    const names = new Set(loaded.entries.map((m) => m.name))
    for (const m of loaded.entries) {
      expect(['active', 'deprecated', 'retired'], m.name).toContain(m.status)
      expect(m.max_request_bytes, m.name).toBeGreaterThan(0)
      if (m.successor !== null) expect(names.has(m.successor), `${m.name} → ${m.successor}`).toBe(true)
      for (const figure of ['context_window', 'max_output_tokens', 'max_request_bytes', 'rates', 'lifecycle']) {
        expect(m.sources?.[figure]?.source, `${m.name} ${figure}`).toBeTruthy()
        expect(m.sources?.[figure]?.checked, `${m.name} ${figure}`).toMatch(/^\d{4}-\d{2}-\d{2}$/)
      }
    }
    // Issue 33's claims, as the catalogue records them.
    const at = (name: string) => loaded.entries.find((m) => m.name === name)!
    expect(at('deepseek/deepseek-chat')).toMatchObject({ status: 'retired', successor: 'deepseek/deepseek-v4-flash' })
    expect(at('deepseek/deepseek-reasoner')).toMatchObject({ status: 'retired', successor: 'deepseek/deepseek-v4-pro' })
    expect(at('xai/grok-4')).toMatchObject({ status: 'retired', retires_at: '2026-05-15T19:00:00Z', successor: 'xai/grok-4.3' })
    expect(at('anthropic/claude-sonnet-4.5')).toMatchObject({ status: 'deprecated', retires_at: '2026-11-30T00:00:00Z', successor: 'anthropic/claude-sonnet-5.5' })
    expect(at('google/gemini-2.5-flash')).toMatchObject({ status: 'deprecated', retires_at: '2026-12-01T00:00:00Z' })
    expect(at('anthropic/claude-haiku-4.5').max_request_bytes).toBe(32_000_000)
  })

  it('keeps reasoning effort consistent with reasoning support', () => {
    for (const m of loaded.entries) {
      if (!m.supports_reasoning) expect(m.max_reasoning_effort ?? null, m.name).toBeNull()
      else expect(['low', 'medium', 'high', 'x_high', 'max'], m.name).toContain(m.max_reasoning_effort)
    }
  })
})

describe('loadCatalogue on a broken file', () => {
  let dir: string
  const original = () => JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as {
    media_profiles: Record<string, unknown>
    models: Record<string, unknown>[]
  } & Record<string, unknown>

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-catalogue-'))
  })
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  const write = (content: string) => {
    const file = join(dir, 'models.json')
    writeFileSync(file, content)
    return file
  }
  /** The error loadCatalogue throws for this file; fails when it throws none or another kind. */
  const failure = (file: string): CatalogueFileError => {
    try {
      loadCatalogue(file)
    } catch (error) {
      expect(error).toBeInstanceOf(CatalogueFileError)
      expect((error as Error).message).toContain(file)
      return error as CatalogueFileError
    }
    throw new Error('loadCatalogue accepted a broken file')
  }

  it('accepts an unchanged copy (the mutations below are what break it)', () => {
    expect(loadCatalogue(write(JSON.stringify(original()))).entries).toHaveLength(23)
  })

  const mutated = (change: (models: Record<string, unknown>[]) => void) => {
    const data = original()
    change(data.models)
    return write(JSON.stringify(data))
  }
  const named = (models: Record<string, unknown>[], name: string) => models.find((m) => m.name === name)!

  it('rejects a successor that is not in the file, naming the path', () => {
    const error = failure(mutated((models) => (named(models, 'xai/grok-4').successor = 'xai/grok-9')))
    expect(error.message).toMatch(/\/models\/\d+\/successor "xai\/grok-9" is not a model of this catalogue/)
  })

  it('rejects a retired model without retires_at, and a deprecated one without deprecated_at', () => {
    expect(failure(mutated((models) => (named(models, 'xai/grok-4').retires_at = null))).message).toMatch(/retires_at is required of a retired model/)
    expect(failure(mutated((models) => (named(models, 'google/gemini-2.5-pro').deprecated_at = null))).message).toMatch(/deprecated_at is required of a deprecated model/)
  })

  it('rejects a retired vendor model with no successor, a status it does not know, and a figure with no source', () => {
    expect(failure(mutated((models) => (named(models, 'xai/grok-4').successor = null))).message).toMatch(/successor is required of a retired model/)
    expect(failure(mutated((models) => (named(models, 'xai/grok-4').status = 'sunset'))).message).toMatch(/status/)
    expect(failure(mutated((models) => delete (named(models, 'xai/grok-4.3').sources as Record<string, unknown>).rates)).message).toMatch(/sources/)
    expect(failure(mutated((models) => delete named(models, 'xai/grok-4.3').max_request_bytes)).message).toMatch(/max_request_bytes/)
  })

  it('rejects a deprecation after the retirement', () => {
    expect(failure(mutated((models) => (named(models, 'xai/grok-4').deprecated_at = '2027-01-01T00:00:00Z'))).message).toMatch(/deprecated_at is after retires_at/)
  })

  it('rejects a file that is not JSON', () => {
    const error = failure(write('{"prices_as_of": "2025-10-15", '))
    expect(error.message).toMatch(/JSON/)
  })

  it('rejects a missing file', () => {
    failure(join(dir, 'absent.json'))
  })

  it('names the model whose media profile does not exist', () => {
    const data = original()
    data.models[3]!.media = 'no-such-profile'
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/3/media')
    expect(error.message).toContain('no-such-profile')
  })

  it('names a duplicated public name', () => {
    const data = original()
    data.models[5]!.name = data.models[4]!.name
    data.models[5]!.provider = data.models[4]!.provider
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/5')
    expect(error.message).toContain(String(data.models[4]!.name))
  })

  it('names a duplicated model id', () => {
    const data = original()
    data.models[7]!.id = data.models[2]!.id
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/7')
    expect(error.message).toContain(String(data.models[2]!.id))
  })

  it('names a model whose name is not prefixed by its provider', () => {
    const data = original()
    data.models[1]!.name = 'openai/claude-haiku-4.5'
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/1/name')
  })

  it('names a missing field', () => {
    const data = original()
    delete data.models[2]!.context_window
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/2')
    expect(error.message).toContain('context_window')
  })

  it('names a malformed price', () => {
    const data = original()
    ;(data.models[0]!.rates as Record<string, unknown>).input = 3
    const error = failure(write(JSON.stringify(data)))
    expect(error.message).toContain('/models/0/rates/input')
  })

  it('rejects an unknown provider', () => {
    const data = original()
    data.models[0]!.provider = 'acme'
    data.models[0]!.name = 'acme/model'
    expect(failure(write(JSON.stringify(data))).message).toContain('/models/0/provider')
  })

  it('caps a profile ceiling above the inline limit at 20 MiB', () => {
    const data = original()
    const profile = data.media_profiles.sandbox as Record<string, { max_bytes_per_attachment: number }>
    profile.user!.max_bytes_per_attachment = 50 * 1024 * 1024
    const loaded = loadCatalogue(write(JSON.stringify(data)))
    for (const m of loaded.entries.filter((e) => e.provider === 'sandbox')) expect(m.media.user.max_bytes_per_attachment).toBe(MIB_20)
  })
})
