import type { LanguageModelV4CallOptions, LanguageModelV4FunctionTool, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { describe, expect, it } from 'vitest'
import { agentMove } from '../../../src/providers/sandbox/sandbox-agent.ts'
import { createSandboxLanguageModel } from '../../../src/providers/sandbox/sandbox-language-model.ts'

/**
 * `sandbox/agent` (issue 35, docs/guide/sandbox.md): echo, except that a user's turn offering tools
 * first calls the first offered tool with arguments its schema takes; the tool's output is then
 * echoed. The arguments are checked here by a validator of the test's own, not the model's.
 */
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv
const takes = (schema: object, args: unknown) => addFormats(new Ajv({ strict: false })).validate(schema, args)

const tool = (name: string, inputSchema: object): LanguageModelV4FunctionTool => ({ type: 'function', name, description: name, inputSchema: inputSchema as LanguageModelV4FunctionTool['inputSchema'] })

const SCHEMAS: Record<string, object> = {
  'a required string': { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  'an enum, an integer with a minimum, an optional field': {
    type: 'object',
    properties: { harbour: { type: 'string', enum: ['Bergen', 'Oslo'] }, berths: { type: 'integer', minimum: 3 }, note: { type: 'string' } },
    required: ['harbour', 'berths'],
  },
  'nested objects, arrays with minItems, formats': {
    type: 'object',
    properties: {
      who: { type: 'object', properties: { email: { type: 'string', format: 'email' }, since: { type: 'string', format: 'date-time' } }, required: ['email', 'since'] },
      days: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 31 }, minItems: 2 },
    },
    required: ['who', 'days'],
    additionalProperties: false,
  },
  'no properties at all': { type: 'object', properties: {} },
}

describe('agentMove', () => {
  for (const [what, schema] of Object.entries(SCHEMAS)) {
    it(`calls the first tool with arguments its schema takes: ${what}`, () => {
      const move = agentMove([tool('first', schema), tool('second', SCHEMAS['a required string']!)])
      expect(move).toMatchObject({ kind: 'call', name: 'first' })
      const args = JSON.parse((move as { args: string }).args)
      expect(takes(schema, args), JSON.stringify(args)).toBe(true)
    })
  }

  it('never calls with arguments the schema refuses: a pattern it cannot meet is said in text', () => {
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' } }, required: ['code'] }
    const move = agentMove([tool('coded', schema)])
    expect(move).toMatchObject({ kind: 'cannot', name: 'coded' })
    expect((move as { reason: string }).reason).toMatch(/pattern/)
  })

  it('offers nothing without tools', () => {
    expect(agentMove([])).toBeNull()
  })
})

async function answer(options: Partial<LanguageModelV4CallOptions>, modelId = 'agent') {
  const model = createSandboxLanguageModel(modelId)
  const { stream } = await model.doStream({ prompt: [], ...options } as LanguageModelV4CallOptions)
  const parts: LanguageModelV4StreamPart[] = []
  for await (const part of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) parts.push(part)
  return {
    text: parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : [])).join(''),
    calls: parts.flatMap((p) => (p.type === 'tool-call' ? [{ name: p.toolName, args: JSON.parse(p.input) }] : [])),
    finish: (parts.find((p) => p.type === 'finish') as Extract<LanguageModelV4StreamPart, { type: 'finish' }>).finishReason.unified,
  }
}

const user = (text: string): LanguageModelV4CallOptions['prompt'] => [{ role: 'user', content: [{ type: 'text', text }] }]
const mooring = tool('lookup_mooring', SCHEMAS['an enum, an integer with a minimum, an optional field']!)

describe('the sandbox/agent model', () => {
  it("a user's turn offering tools: one call of the first tool, nothing echoed, stop reason tool calls", async () => {
    const a = await answer({ prompt: user('Find me a mooring'), tools: [mooring, tool('other', SCHEMAS['a required string']!)] })
    expect(a.calls).toHaveLength(1)
    expect(a.calls[0]!.name).toBe('lookup_mooring')
    expect(takes(mooring.inputSchema, a.calls[0]!.args)).toBe(true)
    expect(a.text).toBe('')
    expect(a.finish).toBe('tool-calls')
  })

  it("the tool's output coming back is answered in text", async () => {
    const prompt: LanguageModelV4CallOptions['prompt'] = [
      ...user('Find me a mooring'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup_mooring', input: { harbour: 'Bergen', berths: 3 } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'lookup_mooring', output: { type: 'text', value: 'berth 12 is free' } }] },
    ]
    const a = await answer({ prompt, tools: [mooring] })
    expect(a.calls).toEqual([])
    expect(a.text).toBe('echo: berth 12 is free')
    expect(a.finish).toBe('stop')
  })

  it('without tools, with tool_choice none, or with tools scripted in the prompt, it is echo', async () => {
    expect(await answer({ prompt: user('hello') })).toMatchObject({ text: 'echo: hello', calls: [], finish: 'stop' })
    expect(await answer({ prompt: user('hello'), tools: [mooring], toolChoice: { type: 'none' } })).toMatchObject({ text: 'echo: hello', calls: [] })
    const scripted = await answer({ prompt: user('/tool other {"x":1}'), tools: [mooring] })
    expect(scripted.calls).toEqual([{ name: 'other', args: { x: 1 } }])
  })

  it('tool_choice naming a tool calls that one', async () => {
    const named = tool('named', SCHEMAS['a required string']!)
    const a = await answer({ prompt: user('go'), tools: [mooring, named], toolChoice: { type: 'tool', toolName: 'named' } })
    expect(a.calls.map((c) => c.name)).toEqual(['named'])
  })

  it('sandbox/echo never calls on its own', async () => {
    expect(await answer({ prompt: user('hello'), tools: [mooring] }, 'echo')).toMatchObject({ text: 'echo: hello', calls: [] })
  })
})
