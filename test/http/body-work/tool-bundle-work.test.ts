import { threadId } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { checkToolBundle, countValuesUpTo } from '../../../src/domain/config/check-tool-bundle.ts'
import type { ToolDefinition } from '../../../src/domain/config/config-types.ts'
import { validateToolBundle } from '../../../src/domain/config/validate-tool-bundle.ts'
import { estimateToolTokens } from '../../../src/domain/tokens/estimate-tool-tokens.ts'
import { saturatingAdd } from '../../../src/domain/tokens/estimate-tokens.ts'
import { createBodyWork, OFFLOAD_TOOL_BUNDLE_VALUES } from '../../../src/http/body-work/body-work.ts'
import { countedReads, nodesOf, readTally } from '../../helpers/counted-reads.ts'
import { largeToolBundle } from '../../helpers/large-tool-bundle.ts'

/**
 * Tool bundles on the body-work pool (decision 061, issue 36 item 3): the event loop checks a bundle
 * itself only below OFFLOAD_TOOL_BUNDLE_VALUES values, and one checked on a worker thread answers
 * exactly as in place. Work is counted in values and reads, never timed; the stall a 2,000-tool
 * publish causes is measured by `npm run bench -- publish` (bench/publish.ts).
 */
const work = createBodyWork({ threads: 1 })
afterAll(() => work.close())

/** What the publish route computed in place before issue 36: the problems, the estimate, the stored text. */
const before = (definitions: ToolDefinition[]) => {
  const problems = validateToolBundle(definitions)
  return problems.length > 0
    ? { problems, estimatedTokens: 0, documentJson: '' }
    : { problems, estimatedTokens: saturatingAdd(...definitions.map(estimateToolTokens)), documentJson: JSON.stringify(definitions) }
}

/** `count` tools of one property each: 7 values a tool (the tool, its name, its schema, "object", properties, the property, "string"). */
const smallTools = (count: number, seed: string): ToolDefinition[] =>
  Array.from({ length: count }, (_, i) => ({ name: `${seed}_${i}`, input_schema: { type: 'object', properties: { q: { type: 'string' } } } }))

describe('checkToolBundle on the body-work pool', () => {
  it('checks 2,000 tools (69,000 values) on a worker thread, with the same estimate and stored text as the in-place check', async () => {
    const bundle = largeToolBundle(2_000, 11)
    expect(nodesOf(bundle)).toBeGreaterThan(60_000)
    const checked = await work.checkToolBundle(bundle)
    expect(checked.threadId).not.toBe(threadId)
    const { threadId: _thread, ...result } = checked
    expect(result).toEqual(before(bundle))
    expect(result.problems).toEqual([])
    expect(JSON.parse(result.documentJson)).toEqual(bundle)
  })

  it('answers a 2,000-tool bundle with problems exactly as in place: the same pointers, messages and order', async () => {
    const bundle = largeToolBundle(2_000, 12)
    bundle[1_999] = { ...bundle[1_999]!, name: bundle[3]!.name }
    bundle[700] = { ...bundle[700]!, input_schema: { type: 'object', properties: { a: { type: 'strin' } } } }
    bundle[1_500] = { ...bundle[1_500]!, input_schema: { type: 'object', properties: { a: { $ref: 'https://example.com/a.json' }, b: { $ref: '#/$defs/none' } } } }
    bundle[42] = { ...bundle[42]!, name: 'has space', input_schema: { type: 'array' } }
    const checked = await work.checkToolBundle(bundle)
    expect(checked.threadId).not.toBe(threadId)
    expect(checked.problems.map((p) => p.pointer)).toEqual([
      '/definitions/42/name',
      '/definitions/42/input_schema/type',
      '/definitions/700/input_schema',
      '/definitions/1500/input_schema/properties/a/$ref',
      '/definitions/1500/input_schema/properties/b/$ref',
      '/definitions/1999/name',
    ])
    expect(checked.problems).toEqual(validateToolBundle(bundle))
    expect(checked).toMatchObject({ estimatedTokens: 0, documentJson: '' })
  })

  it('keeps a value JSON would not (a number past the double range, read as Infinity) as the in-place check sees it', async () => {
    // JSON.parse reads 1e400 as Infinity, a number: a valid `maximum` in place, and so on the worker (a JSON copy would make it null).
    const bundle = [...smallTools(OFFLOAD_TOOL_BUNDLE_VALUES, 'inf'), { name: 'far', input_schema: JSON.parse('{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}') }]
    const checked = await work.checkToolBundle(bundle)
    expect(checked.threadId).not.toBe(threadId)
    expect(checked.problems).toEqual([])
    expect(checked.estimatedTokens).toBe(before(bundle).estimatedTokens)
  })

  it(`checks on the event loop only bundles of fewer than ${OFFLOAD_TOOL_BUNDLE_VALUES} values: the most it checks in one turn`, async () => {
    // 73 tools of 7 values and the array: 512; with the first tool's one property gone (2 values), 510.
    const at = smallTools(OFFLOAD_TOOL_BUNDLE_VALUES / 8 + 9, 'at')
    const under = smallTools(OFFLOAD_TOOL_BUNDLE_VALUES / 8 + 9, 'under')
    under[0] = { name: 'under_0', input_schema: { type: 'object', properties: {} } }
    expect(nodesOf(at)).toBe(OFFLOAD_TOOL_BUNDLE_VALUES)
    expect(nodesOf(under)).toBe(OFFLOAD_TOOL_BUNDLE_VALUES - 2)
    const inPlace = await work.checkToolBundle(under)
    expect(inPlace.threadId).toBe(threadId)
    expect(inPlace).toEqual({ ...before(under), threadId })
    const offloaded = await work.checkToolBundle(at)
    expect(offloaded.threadId).not.toBe(threadId)
    expect(offloaded).toEqual({ ...before(at), threadId: offloaded.threadId })
  })

  it.each<[string, ToolDefinition[]]>([
    ['2,000 tools', largeToolBundle(2_000, 13)],
    ['one tool of 25,000 properties', [{ name: 'wide', input_schema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 25_000 }, (_, i) => [`p${i}`, { type: 'string' }])) } }]],
  ])('tells a large bundle from a small one in bounded work, whatever its shape: %s', (_name, bundle) => {
    const viewed = countedReads(bundle, 1_000)
    expect(countValuesUpTo(viewed, OFFLOAD_TOOL_BUNDLE_VALUES)).toBe(OFFLOAD_TOOL_BUNDLE_VALUES)
    const { reads, nodes } = readTally()
    console.info(`deciding: ${reads} reads of a bundle of ${nodes} values`)
    expect(nodes).toBeGreaterThan(50_000)
    // A few reads a value (a key listed, its descriptor, its value), for at most the cap's values.
    expect(reads).toBeLessThanOrEqual(4 * OFFLOAD_TOOL_BUNDLE_VALUES)
    expect(countValuesUpTo(bundle, Infinity)).toBe(nodes)
  })

  it('the in-place check is the same function as the worker task', () => {
    const bundle = smallTools(3, 'same')
    expect(checkToolBundle(bundle)).toEqual(before(bundle))
  })
})
