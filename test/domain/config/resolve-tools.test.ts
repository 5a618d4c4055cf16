import { describe, expect, it } from 'vitest'
import type { ConfigMode, ConfigWarning, Level, ToolDefinition } from '../../../src/domain/config/config-types.ts'
import { resolveTools, type ToolBundleVersion } from '../../../src/domain/config/resolve-tools.ts'

const SCOPES = [null, 'acme', 'acme/support', 'acme/support/tier1'] as const
type Scope = (typeof SCOPES)[number]
const CHAT = 'acme/support/tier1'

/** A tool whose description records where it was published, so the winner is visible. */
const tool = (name: string, from: string): ToolDefinition => ({
  name,
  description: `${name} from ${from}`,
  input_schema: { type: 'object', properties: {} },
})

type Bundle = [ConfigMode, string[]]
type Published = { global?: Bundle; acme?: Bundle; 'acme/support'?: Bundle; 'acme/support/tier1'?: Bundle }

const label = (scope: Scope) => scope ?? 'global'
const idOf = (scope: Scope) => `tools-${label(scope)}`

function levels(published: Published): Level<ToolBundleVersion>[] {
  return SCOPES.map((namespace) => {
    const entry = published[label(namespace) as keyof Published]
    return {
      namespace,
      active: entry
        ? { id: idOf(namespace), mode: entry[0], definitions: entry[1].map((name) => tool(name, label(namespace))) }
        : null,
    }
  })
}

/** name -> where the winning definition came from; order of the merged list is not specified. */
const winners = (tools: ToolDefinition[]) =>
  Object.fromEntries(tools.map((t) => [t.name, t.description!.replace(`${t.name} from `, '')]))

describe('resolveTools (spec §4.3 rule 2)', () => {
  const cases: {
    name: string
    published: Published
    request?: string[]
    tools: Record<string, string>
    ids: Scope[]
    warnings: ConfigWarning[]
  }[] = [
    { name: 'nothing published sends no tools', published: {}, tools: {}, ids: [], warnings: [] },
    {
      name: 'bundles with distinct names merge across all four levels',
      published: {
        global: ['append', ['g']],
        acme: ['append', ['a']],
        'acme/support': ['append', ['s']],
        'acme/support/tier1': ['append', ['t']],
      },
      tools: { g: 'global', a: 'acme', s: 'acme/support', t: 'acme/support/tier1' },
      ids: [null, 'acme', 'acme/support', 'acme/support/tier1'],
      warnings: [],
    },
    {
      name: 'a name defined nearer wins and warns tool_shadowed at the level that won',
      published: { global: ['append', ['search', 'calc']], 'acme/support': ['append', ['search']] },
      tools: { search: 'acme/support', calc: 'global' },
      ids: [null, 'acme/support'],
      warnings: [{ code: 'tool_shadowed', name: 'search', namespace: 'acme/support' }],
    },
    {
      name: 'the nearest of three definitions wins, one warning per shadowing level',
      published: {
        global: ['append', ['search']],
        acme: ['append', ['search']],
        'acme/support/tier1': ['append', ['search']],
      },
      tools: { search: 'acme/support/tier1' },
      ids: [null, 'acme', 'acme/support/tier1'],
      warnings: [
        { code: 'tool_shadowed', name: 'search', namespace: 'acme' },
        { code: 'tool_shadowed', name: 'search', namespace: 'acme/support/tier1' },
      ],
    },
    {
      name: 'a replace bundle drops every farther tool and warns global_tools_replaced with the count',
      published: {
        global: ['append', ['g1', 'g2']],
        acme: ['append', ['a1']],
        'acme/support': ['replace', ['s1']],
        'acme/support/tier1': ['append', ['t1']],
      },
      tools: { s1: 'acme/support', t1: 'acme/support/tier1' },
      ids: ['acme/support', 'acme/support/tier1'],
      warnings: [{ code: 'global_tools_replaced', namespace: 'acme/support', dropped: 3 }],
    },
    {
      name: 'dropped counts tools, not bundles or shadowed definitions',
      published: { global: ['append', ['x', 'y']], acme: ['append', ['x']], 'acme/support/tier1': ['replace', ['z']] },
      tools: { z: 'acme/support/tier1' },
      ids: ['acme/support/tier1'],
      warnings: [
        { code: 'tool_shadowed', name: 'x', namespace: 'acme' },
        { code: 'global_tools_replaced', namespace: 'acme/support/tier1', dropped: 2 },
      ],
    },
    {
      name: 'a replace that redefines a dropped name is not a shadowing',
      published: { global: ['append', ['search']], acme: ['replace', ['search']] },
      tools: { search: 'acme' },
      ids: ['acme'],
      warnings: [{ code: 'global_tools_replaced', namespace: 'acme', dropped: 1 }],
    },
    {
      name: 'a replace drops tools even when the global scope has none',
      published: { acme: ['append', ['a1', 'a2']], 'acme/support': ['replace', ['s1']] },
      tools: { s1: 'acme/support' },
      ids: ['acme/support'],
      warnings: [{ code: 'global_tools_replaced', namespace: 'acme/support', dropped: 2 }],
    },
    {
      name: 'a replace with nothing farther warns nothing',
      published: { 'acme/support': ['replace', ['s1']], 'acme/support/tier1': ['append', ['t1']] },
      tools: { s1: 'acme/support', t1: 'acme/support/tier1' },
      ids: ['acme/support', 'acme/support/tier1'],
      warnings: [],
    },
    {
      name: 'the global mode is ignored: a global replace merges like append',
      published: { global: ['replace', ['g']], acme: ['append', ['a']] },
      tools: { g: 'global', a: 'acme' },
      ids: [null, 'acme'],
      warnings: [],
    },
    {
      name: 'an empty replace bundle leaves no tools',
      published: { global: ['append', ['g']], acme: ['replace', []] },
      tools: {},
      ids: ['acme'],
      warnings: [{ code: 'global_tools_replaced', namespace: 'acme', dropped: 1 }],
    },
    {
      name: 'a request-level tool is nearest of all and is reported at the chat namespace',
      published: { global: ['append', ['search']], 'acme/support/tier1': ['append', ['search', 'calc']] },
      request: ['search'],
      tools: { search: 'request', calc: 'acme/support/tier1' },
      ids: [null, 'acme/support/tier1'],
      warnings: [
        { code: 'tool_shadowed', name: 'search', namespace: 'acme/support/tier1' },
        { code: 'tool_shadowed', name: 'search', namespace: CHAT },
      ],
    },
    {
      name: 'request-level tools with new names are added without warnings or version ids',
      published: { acme: ['append', ['a']] },
      request: ['r'],
      tools: { a: 'acme', r: 'request' },
      ids: ['acme'],
      warnings: [],
    },
    {
      name: 'request-level tools survive a replace bundle (they are nearer than any level)',
      published: { global: ['append', ['g']], 'acme/support/tier1': ['replace', ['t']] },
      request: ['t'],
      tools: { t: 'request' },
      ids: ['acme/support/tier1'],
      warnings: [
        { code: 'global_tools_replaced', namespace: 'acme/support/tier1', dropped: 1 },
        { code: 'tool_shadowed', name: 't', namespace: CHAT },
      ],
    },
  ]

  it.each(cases)('$name', ({ published, request, tools, ids, warnings }) => {
    const requestTools = request ? request.map((name) => tool(name, 'request')) : null
    const { value, warnings: got } = resolveTools(levels(published), requestTools, CHAT)
    expect(winners(value.tools)).toEqual(tools)
    expect(value.tools).toHaveLength(Object.keys(tools).length)
    expect(value.versionIds).toEqual(ids.map(idOf))
    expect(got).toEqual(warnings)
  })

  it('keeps the winning definition whole (schema, strict, description)', () => {
    const near: ToolDefinition = { name: 'search', input_schema: { type: 'object', required: ['q'] }, strict: true, description: null }
    const { value } = resolveTools([
      { namespace: null, active: { id: 'g', mode: 'append', definitions: [tool('search', 'global')] } },
      { namespace: 'acme', active: { id: 'a', mode: 'append', definitions: [near] } },
    ])
    expect(value.tools).toEqual([near])
  })
})
