import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import type { PartBody } from '../../src/domain/parts.ts'
import { compactionPrompt, mergeInstruction, mergePrompt, SUMMARISATION_INSTRUCTION, summarisationInstruction } from '../../src/providers/compaction-prompt.ts'
import { estimatePromptTokens } from '../../src/providers/estimate-prompt-tokens.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'

/** decisions §6: the sandbox's deterministic summary of a block, and `/fail-summary`. */

const parts: { ordinal: number; body: PartBody }[] = [
  { ordinal: 7, body: { type: 'prompt', text: 'Please book a table for four at eight tonight near the harbour' } },
  { ordinal: 8, body: { type: 'tool_call', tool_name: 'book', tool_use_id: 'call_1', arguments: '{"people":4,"time":"20:00"}' } },
  { ordinal: 9, body: { type: 'tool_result', tool_name: 'book', tool_use_id: 'call_1', text: 'confirmed at The Lantern', is_error: false, trust: 'trusted' } },
  { ordinal: 11, body: { type: 'message', text: 'Booked: The Lantern, 20:00, four people.' } },
]

async function summarise(blockParts: typeof parts, maxOutputTokens = 400) {
  const model = createSandboxLanguageModel('echo-8k')
  const prompt = compactionPrompt(7, 11, blockParts)
  const { stream } = await model.doStream({ prompt, maxOutputTokens, providerOptions: { sandbox: { compaction: { firstOrdinal: 7, lastOrdinal: 11 } } } })
  const chunks: LanguageModelV4StreamPart[] = []
  for await (const chunk of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) chunks.push(chunk)
  const text = chunks.flatMap((c) => (c.type === 'text-delta' ? [c.delta] : [])).join('')
  const finish = chunks.find((c) => c.type === 'finish') as Extract<LanguageModelV4StreamPart, { type: 'finish' }>
  return { text, finish, prompt }
}

describe('compaction prompt', () => {
  it('is our instruction, then the block as one user message of one text item per part', () => {
    const prompt = compactionPrompt(7, 11, parts)
    expect(prompt[0]).toEqual({ role: 'system', content: SUMMARISATION_INSTRUCTION })
    expect(prompt).toHaveLength(2)
    const user = prompt[1]!
    if (user.role !== 'user') throw new Error('expected the transcript as a user message')
    const items = user.content.map((c) => (c.type === 'text' ? c.text : ''))
    expect(items).toEqual([
      'Transcript of ledger ordinals 7-11:',
      '[#7 prompt]\nPlease book a table for four at eight tonight near the harbour',
      '[#8 tool_call]\nbook called with {"people":4,"time":"20:00"}',
      '[#9 tool_result]\nbook returned: confirmed at The Lantern',
      '[#11 message]\nBooked: The Lantern, 20:00, four people.',
    ])
  })

  it('cuts a very long part to 2,000 tokens, head and tail, with a marker', () => {
    const long = compactionPrompt(1, 1, [{ ordinal: 1, body: { type: 'prompt', text: 'word '.repeat(10_000) } }])
    const user = long[1]!
    if (user.role !== 'user') throw new Error('expected the transcript as a user message')
    const item = user.content[1]!
    expect(item.type === 'text' && item.text).toMatch(/\[… \d+ tokens truncated …\]/)
  })
})

describe('the sandbox summarises a block deterministically (decisions §6)', () => {
  it('`Summary of ordinals A-B:` then the first words of each part, with usage by the one estimator', async () => {
    const { text, finish, prompt } = await summarise(parts)
    expect(text).toBe(
      'Summary of ordinals 7-11: Please book a table for four / book called with {"people":4,"time":"20:00"} / book returned: confirmed at The Lantern / Booked: The Lantern, 20:00, four people.',
    )
    expect(finish.finishReason.unified).toBe('stop')
    expect(finish.usage.inputTokens.total).toBe(estimatePromptTokens(prompt))
    expect(finish.usage.outputTokens.total).toBeGreaterThan(0)
    // The same block, the same summary.
    expect((await summarise(parts)).text).toBe(text)
  })

  it('stops at max_tokens with stop reason length', async () => {
    const { text, finish } = await summarise(parts, 5)
    expect(finish.finishReason.unified).toBe('length')
    expect(text.startsWith('Summary of')).toBe(true)
    expect(text.length).toBeLessThan(40)
  })

  it('a block holding a prompt with the line /fail-summary cannot be summarised: the call fails before its first byte', async () => {
    const failing = [{ ordinal: 7, body: { type: 'prompt', text: 'plan the trip\n/fail-summary' } as PartBody }, ...parts.slice(1)]
    await expect(summarise(failing)).rejects.toThrow(/fail-summary/)
    // Only a prompt's line counts: a tool result saying it does not.
    const inResult = [...parts.slice(0, 2), { ordinal: 9, body: { ...(parts[2]!.body as Extract<PartBody, { type: 'tool_result' }>), text: '/fail-summary' } }]
    await expect(summarise(inResult)).resolves.toMatchObject({ text: expect.stringMatching(/^Summary of ordinals 7-11:/) })
  })
})

describe('merging summaries (decisions §5.3, issue 21)', () => {
  const summaries = [
    { firstOrdinal: 3, lastOrdinal: 10, text: 'Summary of ordinals 3-10: Please book a table for four / book called with' },
    { firstOrdinal: 11, lastOrdinal: 14, text: 'Summary of ordinals 11-14: The guests arrived late and asked' },
  ]

  it('the merge prompt is our merge instruction, then each summary under a header naming its range', () => {
    const prompt = mergePrompt(3, 14, summaries, 122)
    expect(prompt[0]).toEqual({ role: 'system', content: mergeInstruction(122) })
    expect(mergeInstruction(122)).toContain('at most 76 words')
    const user = prompt[1]!
    if (user.role !== 'user') throw new Error('expected the summaries as a user message')
    expect(user.content.map((c) => (c.type === 'text' ? c.text : ''))).toEqual([
      'Summaries of ledger ordinals 3-14, oldest first:',
      '[#3-10 summary]\nSummary of ordinals 3-10: Please book a table for four / book called with',
      '[#11-14 summary]\nSummary of ordinals 11-14: The guests arrived late and asked',
    ])
  })

  it('the block instruction asks for as many words as its max_tokens holds (250 for 400 tokens)', () => {
    expect(SUMMARISATION_INSTRUCTION).toContain('at most 250 words')
    expect(summarisationInstruction(48)).toContain('at most 30 words')
  })

  it('the sandbox merges deterministically: one summary of the whole range, the gist of each summary without its own heading', async () => {
    const model = createSandboxLanguageModel('echo-8k')
    const { stream } = await model.doStream({ prompt: mergePrompt(3, 14, summaries, 122), maxOutputTokens: 122, providerOptions: { sandbox: { compaction: { firstOrdinal: 3, lastOrdinal: 14 } } } })
    let text = ''
    for await (const chunk of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) if (chunk.type === 'text-delta') text += chunk.delta
    expect(text).toBe('Summary of ordinals 3-14: Please book a table for four / The guests arrived late and asked')
  })
})
