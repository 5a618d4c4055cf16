import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ToolDefinition } from '../../src/domain/config/config-types.ts'
import { INSTRUCTION_SEPARATOR } from '../../src/domain/config/resolve-instructions.ts'
import { estimateConfigDocumentTokens } from '../../src/domain/tokens/estimate-config-tokens.ts'
import { estimateTokens, saturatingAdd } from '../../src/domain/tokens/estimate-tokens.ts'
import { estimateToolTokens } from '../../src/domain/tokens/estimate-tool-tokens.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import { createConfigVersionStore, type NewConfigVersion } from '../../src/store/config-versions.ts'
import { openDatabase, wallClock } from '../../src/store/database.ts'
import { createOrganisationStore } from '../../src/store/organisations.ts'
import { createStore } from '../../src/store/index.ts'
import { migrations } from '../../src/store/migrations/index.ts'

// Counts the tokenizer's calls, to show resolution after a restart tokenizes nothing.
const tokenizer = vi.hoisted(() => ({ calls: 0 }))
vi.mock('gpt-tokenizer', async (importOriginal) => {
  const actual = await importOriginal<typeof import('gpt-tokenizer')>()
  return {
    ...actual,
    countTokens: (...args: Parameters<typeof actual.countTokens>) => {
      tokenizer.calls++
      return actual.countTokens(...args)
    },
  }
})

let dir: string
let file: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'parley-config-tokens-'))
  file = join(dir, 'parley.db')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** `length` random lowercase letters, unbroken: the costliest text for the tokenizer. */
function letters(length: number, seed: number): string {
  let state = seed
  const out: string[] = []
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
    out.push(String.fromCharCode(97 + ((state >> 8) % 26)))
  }
  return out.join('')
}

const tool = (name: string, description = `the ${name} tool`): ToolDefinition => ({ name, description, input_schema: { type: 'object' } })
const version = (orgId: string, kind: 'instructions' | 'tools', document: unknown, estimatedTokens: number, namespace: string | null = null): NewConfigVersion => ({
  orgId,
  kind,
  namespace,
  mode: 'append',
  document,
  estimatedTokens,
})

describe('migration 0008 (config token estimates)', () => {
  it('is registered eighth, leaving user_version 8', () => {
    expect(migrations.map((m) => m.name).indexOf('0008-config-token-estimates')).toBe(7)
  })

  it('estimates again every stored instruction and tool bundle, leaving retention policies and budgets alone', () => {
    const old = openDatabase(file, { migrations: migrations.slice(0, 7) })
    // The stores this schema already has: the whole store wants tables of later migrations.
    const store = { organisations: createOrganisationStore(old, wallClock), config: createConfigVersionStore(old, wallClock) }
    const orgId = store.organisations.create('Acme', 'acme').id
    const long = letters(50_000, 3)
    const bundle = [tool('search'), tool('calc')]
    // As an earlier build stored them: made by another estimator (here plainly wrong numbers).
    const [short, big, tools] = store.config.publish([
      version(orgId, 'instructions', 'Be brief.', 999),
      version(orgId, 'instructions', long, 1, 'acme'),
      version(orgId, 'tools', bundle, 7),
    ])
    const [retention] = store.config.publish([{ orgId, kind: 'retention', namespace: null, mode: null, document: { version: 1 }, estimatedTokens: 0 }])
    old.close()

    const db = openDatabase(file)
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.length)
      const after = createStore(db)
      expect(after.config.get(orgId, 'instructions', short!.id)!.estimated_tokens).toBe(estimateTokens('Be brief.'))
      expect(after.config.get(orgId, 'instructions', big!.id)!.estimated_tokens).toBe(estimateTokens(long))
      expect(after.config.get(orgId, 'tools', tools!.id)!.estimated_tokens).toBe(saturatingAdd(...bundle.map(estimateToolTokens)))
      expect(after.config.get(orgId, 'retention', retention!.id)!.estimated_tokens).toBe(0)
    } finally {
      db.close()
    }
  })
})

describe('resolution reads the stored estimates', () => {
  it('uses one contributing instruction version and whole bundles as stored, without tokenizing them', () => {
    const db = openDatabase(file)
    try {
      const store = createStore(db)
      const orgId = store.organisations.create('Acme', 'acme').id
      // Deliberately not what the estimator gives: resolution must answer the stored numbers.
      store.config.publish([version(orgId, 'instructions', 'Be brief and kind.', 12_345), version(orgId, 'tools', [tool('a'), tool('b')], 40)])
      store.config.publish([version(orgId, 'tools', [tool('c')], 2, 'acme')])
      const calls = tokenizer.calls
      const resolved = createConfigResolver(store, { keep: false }).resolveConfig(orgId, 'acme')
      expect(resolved.tokens).toEqual({ instructions: 12_345, tools: 42 })
      expect(resolved.estimated_tokens).toBe(12_387)
      expect(tokenizer.calls).toBe(calls)
    } finally {
      db.close()
    }
  })

  it('estimates afresh what no single stored version holds: joined instructions, shadowed tools, request tools', () => {
    const db = openDatabase(file)
    try {
      const store = createStore(db)
      const orgId = store.organisations.create('Acme', 'acme').id
      const [search, calc, searchAcme, extra] = [tool('search'), tool('calc'), tool('search', 'the acme search'), tool('extra')]
      store.config.publish([version(orgId, 'instructions', 'Global rules.', 1), version(orgId, 'tools', [search, calc], 1)])
      store.config.publish([version(orgId, 'instructions', 'Acme rules.', 1, 'acme'), version(orgId, 'tools', [searchAcme], 1, 'acme')])
      const resolver = createConfigResolver(store, { keep: false })
      const resolved = resolver.resolveConfig(orgId, 'acme')
      expect(resolved.instructions).toBe(`Global rules.${INSTRUCTION_SEPARATOR}Acme rules.`)
      expect(resolved.tokens).toEqual({
        instructions: estimateTokens(resolved.instructions!),
        tools: saturatingAdd(estimateToolTokens(searchAcme), estimateToolTokens(calc)),
      })
      expect(resolver.resolveConfig(orgId, null, [extra]).tokens.tools).toBe(saturatingAdd(estimateToolTokens(search), estimateToolTokens(calc), estimateToolTokens(extra)))
    } finally {
      db.close()
    }
  })

  it('after a restart, resolves a stored 1 MiB instruction without tokenizing it', () => {
    const body = letters(1024 * 1024, 5)
    const first = openDatabase(file)
    const orgId = createStore(first).organisations.create('Acme', 'acme').id
    const stored = estimateConfigDocumentTokens('instructions', body)
    createStore(first).config.publish([version(orgId, 'instructions', body, stored)])
    first.close()

    const db = openDatabase(file)
    try {
      const calls = tokenizer.calls
      const resolved = createConfigResolver(createStore(db)).resolveConfig(orgId, null)
      expect(resolved.instructions).toBe(body)
      expect(resolved.tokens.instructions).toBe(stored)
      expect(resolved.tokens.instructions).toBe(estimateTokens(body))
      // Read from the row, not counted again: the tokenizer was not called.
      expect(tokenizer.calls).toBe(calls)
    } finally {
      db.close()
    }
  })
})
