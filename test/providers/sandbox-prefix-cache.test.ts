import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import { estimatePromptTokens, promptTokenItems } from '../../src/providers/estimate-prompt-tokens.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import { createSandboxPrefixCache, prefixItems } from '../../src/providers/sandbox/sandbox-prefix-cache.ts'

const PNG_1x1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')

const TOOLS: LanguageModelV4FunctionTool[] = [
  { type: 'function', name: 'lookup', description: 'Looks a thing up.', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
]

/** A turn of every kind: system, user text and file, assistant reasoning, text and call, tool result. */
const FIRST: LanguageModelV4Prompt = [
  { role: 'system', content: 'You are terse. '.repeat(20) },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What does the attached image show? '.repeat(10) },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: new Uint8Array(PNG_1x1) } },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'I should look it up first. '.repeat(5) },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup', input: { q: 'pixel' } },
    ],
  },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'lookup', output: { type: 'text', value: 'one white pixel '.repeat(30) } }] },
]
const NEXT_TURN: LanguageModelV4Prompt = [
  { role: 'assistant', content: [{ type: 'text', text: 'It is one white pixel.' }] },
  { role: 'user', content: [{ type: 'text', text: 'Thanks. And now?' }] },
]
const SECOND: LanguageModelV4Prompt = [...FIRST, ...NEXT_TURN]

/** The same prompt made of fresh objects: what a restart, or a conversion without its cache, sends. */
const cloned = (prompt: LanguageModelV4Prompt): LanguageModelV4Prompt =>
  prompt.map((m) =>
    m.role === 'system'
      ? { ...m }
      : ({ ...m, content: m.content.map((item) => (item.type === 'file' ? { ...item, data: { type: 'data' as const, data: new Uint8Array((item.data as { data: Uint8Array }).data) } } : structuredClone(item))) } as typeof m),
  )

const tokensOf = (prompt: LanguageModelV4Prompt, tools = TOOLS) => estimatePromptTokens(prompt, tools)

describe('promptTokenItems', () => {
  it('yields the tools block, the system message and each content item, whose counts sum to estimatePromptTokens', () => {
    const items = [...promptTokenItems(SECOND, TOOLS)]
    expect(items.map((i) => (i.kind === 'content' ? `${i.role}${i.startsMessage ? '>' : '+'}${i.item.type}` : i.kind))).toEqual([
      'tools',
      'system',
      'user>text',
      'user+file',
      'assistant>reasoning',
      'assistant+text',
      'assistant+tool-call',
      'tool>tool-result',
      'assistant>text',
      'user>text',
    ])
    expect(items.every((i) => Number.isInteger(i.tokens) && i.tokens >= 0)).toBe(true)
    const cases: [LanguageModelV4Prompt, LanguageModelV4FunctionTool[]][] = [
      [SECOND, TOOLS],
      [FIRST, []],
      [[], TOOLS],
      [[], []],
    ]
    for (const [prompt, tools] of cases) {
      const sum = [...promptTokenItems(prompt, tools)].reduce((s, i) => s + i.tokens, 0)
      expect(sum).toBe(estimatePromptTokens(prompt, tools))
      expect(prefixItems(prompt, tools).reduce((s, i) => s + i.tokens, 0)).toBe(sum)
    }
  })
})

describe('the sandbox prefix cache', () => {
  it('reads nothing on a key’s first request', () => {
    const cache = createSandboxPrefixCache()
    expect(cache.measure('chat-a', prefixItems(FIRST, TOOLS))).toBe(0)
  })

  it('reads the whole previous prompt when the next request extends it', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(FIRST, TOOLS))
    expect(cache.measure('chat-a', prefixItems(SECOND, TOOLS))).toBe(tokensOf(FIRST))
    // The same prompt again: all of it.
    expect(cache.measure('chat-a', prefixItems(SECOND, TOOLS))).toBe(tokensOf(SECOND))
  })

  it('compares by content, not by object: fresh copies and file bytes of equal value repeat', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(FIRST, TOOLS))
    expect(cache.measure('chat-a', prefixItems(cloned(SECOND), structuredClone(TOOLS)))).toBe(tokensOf(FIRST))
  })

  it('a changed early item reads only the items before it', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(SECOND, TOOLS))
    const changed = cloned(SECOND)
    const user = changed[1] as Extract<LanguageModelV4Prompt[number], { role: 'user' }>
    user.content[1] = { type: 'file', mediaType: 'image/png', data: { type: 'data', data: new Uint8Array([...PNG_1x1.subarray(0, -1), 0]) } }
    expect(cache.measure('chat-a', prefixItems(changed, TOOLS))).toBe(tokensOf([SECOND[0]!, { role: 'user', content: [user.content[0]!] }]))

    // Changed tools change everything after them, the system message included.
    expect(cache.measure('chat-a', prefixItems(changed, [{ ...TOOLS[0]!, description: 'Other.' }]))).toBe(0)
  })

  it('a role change or a regrouping of the same items breaks the prefix there', () => {
    const cache = createSandboxPrefixCache()
    const base: LanguageModelV4Prompt = [
      { role: 'user', content: [{ type: 'text', text: 'one' }] },
      { role: 'user', content: [{ type: 'text', text: 'two' }] },
    ]
    cache.measure('chat-a', prefixItems(base))
    const asAssistant: LanguageModelV4Prompt = [base[0]!, { role: 'assistant', content: [{ type: 'text', text: 'two' }] }]
    expect(cache.measure('chat-a', prefixItems(asAssistant))).toBe(tokensOf([base[0]!], []))
    cache.measure('chat-a', prefixItems(base))
    const merged: LanguageModelV4Prompt = [{ role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }]
    expect(cache.measure('chat-a', prefixItems(merged))).toBe(tokensOf([base[0]!], []))
  })

  it('ignores provider options: an item marked as a cache breakpoint repeats the unmarked one', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(FIRST, TOOLS))
    const marked = FIRST.map((m) =>
      m.role === 'tool' ? { ...m, content: m.content.map((item) => ({ ...item, providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } })) } : m,
    ) as LanguageModelV4Prompt
    expect(cache.measure('chat-a', prefixItems(marked, TOOLS))).toBe(tokensOf(FIRST))
  })

  it('keeps keys apart', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(FIRST, TOOLS))
    expect(cache.measure('chat-b', prefixItems(SECOND, TOOLS))).toBe(0)
    expect(cache.measure('chat-a', prefixItems(SECOND, TOOLS))).toBe(tokensOf(FIRST))
  })

  it('without a key reads nothing and leaves the key’s previous request as it was', () => {
    const cache = createSandboxPrefixCache()
    cache.measure('chat-a', prefixItems(FIRST, TOOLS))
    expect(cache.measure(undefined, prefixItems(FIRST, TOOLS))).toBe(0)
    expect(cache.measure(undefined, prefixItems([{ role: 'user', content: [{ type: 'text', text: 'summarise this' }] }]))).toBe(0)
    expect(cache.measure('chat-a', prefixItems(SECOND, TOOLS))).toBe(tokensOf(FIRST))
    expect(cache.size).toBe(1)
  })

  it('forgets the least recently used key past its bounds', () => {
    const cache = createSandboxPrefixCache({ maxKeys: 2, maxItems: 1_000 })
    cache.measure('a', prefixItems(FIRST, TOOLS))
    cache.measure('b', prefixItems(FIRST, TOOLS))
    cache.measure('a', prefixItems(FIRST, TOOLS)) // a is now the most recent
    cache.measure('c', prefixItems(FIRST, TOOLS)) // b goes
    expect(cache.size).toBe(2)
    expect(cache.measure('a', prefixItems(FIRST, TOOLS))).toBe(tokensOf(FIRST))
    expect(cache.measure('b', prefixItems(FIRST, TOOLS))).toBe(0)

    // The item bound: FIRST is 8 items, so two of them do not fit in 12.
    const small = createSandboxPrefixCache({ maxKeys: 100, maxItems: 12 })
    small.measure('a', prefixItems(FIRST, TOOLS))
    small.measure('b', prefixItems(FIRST, TOOLS))
    expect(small.size).toBe(1)
    expect(small.measure('a', prefixItems(FIRST, TOOLS))).toBe(0)
    // A request larger than the whole bound is not remembered.
    const tiny = createSandboxPrefixCache({ maxKeys: 100, maxItems: 4 })
    tiny.measure('a', prefixItems(FIRST, TOOLS))
    expect(tiny.size).toBe(0)
  })
})

describe('the sandbox model’s usage', () => {
  const finish = async (model: ReturnType<typeof createSandboxLanguageModel>, prompt: LanguageModelV4Prompt, cacheKey?: string) => {
    const { stream } = await model.doStream({ prompt, tools: TOOLS, providerOptions: { sandbox: cacheKey === undefined ? {} : { cacheKey } } })
    const parts: LanguageModelV4StreamPart[] = []
    for await (const part of stream) parts.push(part)
    return parts.find((p) => p.type === 'finish')!.usage.inputTokens
  }

  it('reports the repeated prefix as cache reads, the rest as fresh input; the total stays the estimate', async () => {
    const model = createSandboxLanguageModel('echo')
    expect(await finish(model, FIRST, 'chat-a')).toEqual({ total: tokensOf(FIRST), noCache: tokensOf(FIRST), cacheRead: 0, cacheWrite: 0 })
    // A compaction run: no key, no cache, and the chat's entry is untouched.
    expect(await finish(model, [{ role: 'user', content: [{ type: 'text', text: 'summarise' }] }])).toMatchObject({ cacheRead: 0 })
    expect(await finish(model, SECOND, 'chat-a')).toEqual({
      total: tokensOf(SECOND),
      noCache: tokensOf(SECOND) - tokensOf(FIRST),
      cacheRead: tokensOf(FIRST),
      cacheWrite: 0,
    })
    // Another model is another cache.
    expect(await finish(createSandboxLanguageModel('echo-8k'), SECOND, 'chat-a')).toMatchObject({ cacheRead: 0 })
  })
})
