import { describe, expect, it } from 'vitest'
import type { RetentionRules, Truncation } from '../../../src/domain/config/config-types.ts'
import { PLATFORM_DEFAULT_RETENTION } from '../../../src/domain/config/platform-defaults.ts'
import { validateRetentionRules } from '../../../src/domain/config/validate-retention-rules.ts'

const pointers = (rules: RetentionRules) => validateRetentionRules(rules).map((p) => p.pointer)
const toolRules = (...tools: string[]): RetentionRules => ({ version: 1, tools: { rules: tools.map((tool) => ({ tool })) } })
const mimeRules = (...mimes: string[]): RetentionRules => ({
  version: 1,
  media: { rules: mimes.map((mime) => ({ mime, retain: 0.5 })) },
})

describe('validateRetentionRules (decisions §5)', () => {
  describe('schema version', () => {
    it.each([0, 2, 3, 99])('rejects unsupported version %i at /version', (version) => {
      const problems = validateRetentionRules({ version })
      expect(problems).toHaveLength(1)
      expect(problems[0]!.pointer).toBe('/version')
      expect(problems[0]!.message).toMatch(/version/)
    })
    it('accepts version 1', () => {
      expect(validateRetentionRules({ version: 1 })).toEqual([])
    })
  })

  describe('unreachable rules', () => {
    const unreachable: { name: string; rules: RetentionRules; pointers: string[] }[] = [
      { name: 'duplicate tool pattern', rules: toolRules('search', 'search'), pointers: ['/tools/rules/1/tool'] },
      { name: 'duplicate mime pattern', rules: mimeRules('image/png', 'image/png'), pointers: ['/media/rules/1/mime'] },
      { name: 'any tool rule after `*`', rules: toolRules('*', 'search'), pointers: ['/tools/rules/1/tool'] },
      { name: 'a pattern after `*`', rules: toolRules('calc', '*', 'search_*'), pointers: ['/tools/rules/2/tool'] },
      { name: 'any mime rule after `*/*`', rules: mimeRules('*/*', 'image/png'), pointers: ['/media/rules/1/mime'] },
      { name: 'any mime rule after `*`', rules: mimeRules('*', 'text/plain'), pointers: ['/media/rules/1/mime'] },
      { name: '`*/*` after `*`', rules: mimeRules('*', '*/*'), pointers: ['/media/rules/1/mime'] },
      { name: '`image/png` after `image/*`', rules: mimeRules('image/*', 'image/png'), pointers: ['/media/rules/1/mime'] },
      {
        name: 'mime types compare case-insensitively',
        rules: mimeRules('IMAGE/*', 'image/PNG'),
        pointers: ['/media/rules/1/mime'],
      },
      { name: '`search_x` after `search_*`', rules: toolRules('search_*', 'search_x'), pointers: ['/tools/rules/1/tool'] },
      {
        name: 'a narrower glob after a wider one',
        rules: toolRules('search_*', 'search_web_*'),
        pointers: ['/tools/rules/1/tool'],
      },
      {
        name: 'every unreachable rule is reported, not just the first',
        rules: { ...toolRules('a', 'b', 'a', '*', 'c'), media: mimeRules('image/*', 'image/gif', 'text/plain').media },
        pointers: ['/media/rules/1/mime', '/tools/rules/2/tool', '/tools/rules/4/tool'],
      },
    ]
    it.each(unreachable)('rejects $name', ({ rules, pointers: expected }) => {
      expect(pointers(rules).sort()).toEqual(expected.sort())
    })

    const reachable: { name: string; rules: RetentionRules }[] = [
      { name: 'specific before wildcard (tools)', rules: toolRules('search_x', 'search_*', '*') },
      { name: 'specific before wildcard (mime)', rules: mimeRules('image/png', 'image/*', '*/*') },
      { name: 'a sibling type after `image/*`', rules: mimeRules('image/*', 'imagex/png', 'text/*') },
      { name: 'a name the glob does not match', rules: toolRules('search_*', 'search', 'searchx') },
      { name: 'different prefixes', rules: toolRules('web_*', 'db_*') },
    ]
    it.each(reachable)('accepts $name', ({ rules }) => {
      expect(validateRetentionRules(rules)).toEqual([])
    })
  })

  describe('truncations that can never cut', () => {
    const at = (t: Truncation): [string, RetentionRules][] => [
      ['/tools/default/arguments', { version: 1, tools: { default: { arguments: t } } }],
      ['/tools/default/result', { version: 1, tools: { default: { result: t } } }],
      ['/tools/errors', { version: 1, tools: { errors: t } }],
      ['/tools/rules/0/result', { version: 1, tools: { rules: [{ tool: 'x', result: t }] } }],
      ['/tools/rules/1/arguments', { version: 1, tools: { rules: [{ tool: 'x' }, { tool: 'y', arguments: t }] } }],
      ['/text/prompt', { version: 1, text: { prompt: t } }],
      ['/text/message', { version: 1, text: { message: t } }],
    ]
    const bad: [string, Truncation][] = [
      ['over with to equal to over', { mode: 'over', over: 100, to: 100 }],
      ['over with to above over', { mode: 'over', over: 100, to: 500, keep: 'head' }],
      ['always with to 0 and no keep', { mode: 'always', to: 0 }],
    ]
    for (const [what, truncation] of bad) {
      it.each(at(truncation))(`rejects ${what} at %s`, (pointer, rules) => {
        expect(pointers(rules)).toEqual([`${pointer}/to`])
      })
    }

    const good: [string, Truncation][] = [
      ['keep', { mode: 'keep' }],
      ['over with to below over', { mode: 'over', over: 100, to: 99 }],
      ['over with to 0', { mode: 'over', over: 100, to: 0, keep: 'tail' }],
      ['always with a positive to', { mode: 'always', to: 1 }],
      ['always with to 0 and a keep shape', { mode: 'always', to: 0, keep: 'head_and_tail' }],
    ]
    for (const [what, truncation] of good) {
      it.each(at(truncation))(`accepts ${what} at %s`, (_pointer, rules) => {
        expect(validateRetentionRules(rules)).toEqual([])
      })
    }
  })

  describe('valid documents produce no problems', () => {
    it.each<[string, RetentionRules]>([
      ['the minimal document', { version: 1 }],
      ['the platform default', PLATFORM_DEFAULT_RETENTION],
      [
        'a full document',
        {
          version: 1,
          media: { default: 0.3, rules: [{ mime: 'application/pdf', retain: 0 }, { mime: 'image/*', retain: 0.5 }] },
          tools: {
            default: { arguments: { mode: 'keep' }, result: { mode: 'over', over: 4000, to: 1000, keep: 'head_and_tail' } },
            rules: [
              { tool: 'fetch_page', result: { mode: 'always', to: 200, keep: 'head' } },
              { tool: 'fetch_*', arguments: { mode: 'over', over: 50, to: 10 } },
              { tool: '*', result: { mode: 'keep' } },
            ],
            errors: { mode: 'always', to: 300 },
            mark_truncations: false,
          },
          text: { prompt: { mode: 'keep' }, message: { mode: 'over', over: 8000, to: 2000, keep: 'tail' } },
          reasoning: 0,
          verbatim_within: 1,
          anchor_parts: 0,
        },
      ],
      ['errors null', { version: 1, tools: { errors: null } }],
    ])('%s', (_name, rules) => {
      expect(validateRetentionRules(rules)).toEqual([])
    })
  })
})
