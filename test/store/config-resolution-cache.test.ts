import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ContextBudget, ToolDefinition } from '../../src/domain/config/config-types.ts'
import { createConfigResolver, type ConfigResolver } from '../../src/store/config-resolution.ts'
import type { NewConfigVersion } from '../../src/store/config-versions.ts'
import { openDatabase } from '../../src/store/database.ts'
import { createStore, type Store } from '../../src/store/index.ts'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let orgId: string
let resolver: ConfigResolver

const instructions = (body: string, namespace: string | null = null): NewConfigVersion => ({
  orgId,
  kind: 'instructions',
  namespace,
  mode: 'append',
  document: body,
  estimatedTokens: 1,
})
const budget = (max: number, modelId: string | null = null): NewConfigVersion => ({
  orgId,
  kind: 'budget',
  namespace: null,
  modelId,
  mode: null,
  document: { version: 3, headroom: 0.2, max_history_tokens: max } satisfies ContextBudget,
  estimatedTokens: 0,
})
const tool = (name: string): ToolDefinition => ({ name, input_schema: { type: 'object' } })
const publish = (store: Store, version: NewConfigVersion) => store.config.publish([version])[0]!

beforeEach(() => {
  t = openTempStore()
  orgId = t.store.organisations.create('Acme', 'acme').id
  resolver = createConfigResolver(t.store)
})
afterEach(() => t.close())

describe('configuration resolution cache', () => {
  it('keeps an answer while nothing changes', () => {
    publish(t.store, instructions('Be brief.'))
    const first = resolver.resolveConfig(orgId, 'team/a')
    expect(first.instructions).toBe('Be brief.')
    expect(resolver.resolveConfig(orgId, 'team/a')).toBe(first)
    expect(resolver.resolveConfig(orgId, 'team/b')).not.toBe(first)
  })

  it('sees publish, activate and withdraw made through the same store', () => {
    const v1 = publish(t.store, instructions('First.'))
    const before = resolver.resolveConfig(orgId, null)
    expect(before.versions.instructions).toEqual([v1.id])

    const v2 = publish(t.store, instructions('Second.'))
    const published = resolver.resolveConfig(orgId, null)
    expect(published.instructions).toBe('Second.')
    expect(published.versions.instructions).toEqual([v2.id])

    t.store.config.activate(orgId, 'instructions', v1.id)
    const activated = resolver.resolveConfig(orgId, null)
    expect(activated.instructions).toBe('First.')
    expect(activated.versions.instructions).toEqual([v1.id])

    expect(t.store.config.withdraw(orgId, 'instructions', null)).toBe(true)
    const withdrawn = resolver.resolveConfig(orgId, null)
    expect(withdrawn.instructions).toBeNull()
    expect(withdrawn.versions.instructions).toEqual([])
  })

  it('sees a publish committed through another connection to the same file', () => {
    publish(t.store, instructions('Mine.'))
    const kept = resolver.resolveConfig(orgId, null)
    expect(resolver.resolveConfig(orgId, null)).toBe(kept)

    const otherDb = openDatabase(t.file)
    try {
      const theirs = publish(createStore(otherDb), instructions('Theirs.'))
      const seen = resolver.resolveConfig(orgId, null)
      expect(seen.instructions).toBe('Theirs.')
      expect(seen.versions.instructions).toEqual([theirs.id])
    } finally {
      otherDb.close()
    }
  })

  it('never keeps an answer that carries request tools', () => {
    const plain = resolver.resolveConfig(orgId, null)
    const withA = resolver.resolveConfig(orgId, null, [tool('a')])
    const withB = resolver.resolveConfig(orgId, null, [tool('b')])
    expect(withA.tools.map((d) => d.name)).toEqual(['a'])
    expect(withB.tools.map((d) => d.name)).toEqual(['b'])
    expect(resolver.resolveConfig(orgId, null)).toBe(plain)
    expect(plain.tools).toEqual([])
  })

  it('keeps budgets per model id and sees a budget publish', () => {
    const untagged = publish(t.store, budget(1000))
    const forM1 = resolver.resolveBudget(orgId, null, 'm1')
    const forM2 = resolver.resolveBudget(orgId, null, 'm2')
    expect(resolver.resolveBudget(orgId, null, 'm1')).toBe(forM1)
    expect(resolver.resolveBudget(orgId, null, 'm2')).toBe(forM2)
    expect(forM1).not.toBe(forM2)
    expect(forM1.source).toMatchObject({ id: untagged.id, tagged_model: null })

    const tagged = publish(t.store, budget(2000, 'm1'))
    const m1 = resolver.resolveBudget(orgId, null, 'm1')
    expect(m1.budget.max_history_tokens).toBe(2000)
    expect(m1.source).toMatchObject({ id: tagged.id, tagged_model: 'm1' })
    expect(resolver.resolveBudget(orgId, null, 'm2').source).toMatchObject({ id: untagged.id, tagged_model: null })
  })
})
