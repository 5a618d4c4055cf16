import { describe, expect, it } from 'vitest'
import type { ConfigMode, ConfigWarning, Level } from '../../../src/domain/config/config-types.ts'
import {
  INSTRUCTION_SEPARATOR,
  resolveInstructions,
  type InstructionVersion,
} from '../../../src/domain/config/resolve-instructions.ts'

/** The tree every case resolves over, root first: org-global, acme, acme/support, acme/support/tier1. */
const SCOPES = [null, 'acme', 'acme/support', 'acme/support/tier1'] as const
type Scope = (typeof SCOPES)[number]
type Published = Partial<Record<Scope & string, [ConfigMode, string]>> & { global?: [ConfigMode, string] }

const idOf = (scope: Scope) => `instr-${scope ?? 'global'}`

/** Levels for the chat namespace acme/support/tier1, with the given instruction at each scope. */
function levels(published: Published): Level<InstructionVersion>[] {
  return SCOPES.map((namespace) => {
    const entry = namespace === null ? published.global : published[namespace]
    return { namespace, active: entry ? { id: idOf(namespace), mode: entry[0], body: entry[1] } : null }
  })
}

const SEP = INSTRUCTION_SEPARATOR

describe('resolveInstructions (spec §4.3 rule 1)', () => {
  it('uses a blank line between contributions', () => {
    expect(SEP).toBe('\n\n')
  })

  const cases: {
    name: string
    published: Published
    text: string | null
    ids: Scope[]
    warnings: ConfigWarning[]
  }[] = [
    { name: 'nothing published gives null, not an empty string', published: {}, text: null, ids: [], warnings: [] },
    {
      name: 'an empty instruction is an empty string, not null',
      published: { 'acme/support': ['append', ''] },
      text: '',
      ids: ['acme/support'],
      warnings: [],
    },
    {
      name: 'an empty global instruction alone is an empty string',
      published: { global: ['append', ''] },
      text: '',
      ids: [null],
      warnings: [],
    },
    {
      name: 'append at every level concatenates root first',
      published: {
        global: ['append', 'G'],
        acme: ['append', 'A'],
        'acme/support': ['append', 'S'],
        'acme/support/tier1': ['append', 'T'],
      },
      text: ['G', 'A', 'S', 'T'].join(SEP),
      ids: [null, 'acme', 'acme/support', 'acme/support/tier1'],
      warnings: [],
    },
    {
      name: 'levels without an instruction are skipped',
      published: { global: ['append', 'G'], 'acme/support/tier1': ['append', 'T'] },
      text: `G${SEP}T`,
      ids: [null, 'acme/support/tier1'],
      warnings: [],
    },
    {
      name: 'the global mode is ignored: a global replace still contributes and warns nothing',
      published: { global: ['replace', 'G'], acme: ['append', 'A'] },
      text: `G${SEP}A`,
      ids: [null, 'acme'],
      warnings: [],
    },
    {
      name: 'a replace at acme discards global and warns global_instruction_replaced',
      published: { global: ['append', 'G'], acme: ['replace', 'A'], 'acme/support': ['append', 'S'] },
      text: `A${SEP}S`,
      ids: ['acme', 'acme/support'],
      warnings: [{ code: 'global_instruction_replaced', namespace: 'acme' }],
    },
    {
      name: 'a replace at the deepest level discards every level above it',
      published: {
        global: ['append', 'G'],
        acme: ['append', 'A'],
        'acme/support': ['append', 'S'],
        'acme/support/tier1': ['replace', 'T'],
      },
      text: 'T',
      ids: ['acme/support/tier1'],
      warnings: [{ code: 'global_instruction_replaced', namespace: 'acme/support/tier1' }],
    },
    {
      name: 'a replace with no global instruction above it warns nothing',
      published: { acme: ['append', 'A'], 'acme/support': ['replace', 'S'], 'acme/support/tier1': ['append', 'T'] },
      text: `S${SEP}T`,
      ids: ['acme/support', 'acme/support/tier1'],
      warnings: [],
    },
    {
      name: 'a second replace warns nothing once the global instruction is already gone',
      published: {
        global: ['append', 'G'],
        acme: ['replace', 'A'],
        'acme/support': ['append', 'S'],
        'acme/support/tier1': ['replace', 'T'],
      },
      text: 'T',
      ids: ['acme/support/tier1'],
      warnings: [{ code: 'global_instruction_replaced', namespace: 'acme' }],
    },
    {
      name: 'a replace with an empty body discards the levels above and leaves an empty string',
      published: { global: ['append', 'G'], 'acme/support': ['replace', ''] },
      text: '',
      ids: ['acme/support'],
      warnings: [{ code: 'global_instruction_replaced', namespace: 'acme/support' }],
    },
  ]

  it.each(cases)('$name', ({ published, text, ids, warnings }) => {
    const { value, warnings: got } = resolveInstructions(levels(published))
    expect(value.text).toBe(text)
    expect(value.versionIds).toEqual(ids.map(idOf))
    expect(got).toEqual(warnings)
  })

  it('resolves a shallower chat namespace over its own lineage only', () => {
    const { value } = resolveInstructions(levels({ global: ['append', 'G'], acme: ['append', 'A'] }).slice(0, 2))
    expect(value.text).toBe(`G${SEP}A`)
  })
})
