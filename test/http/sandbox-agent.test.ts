import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { deltaText, getRun, history, turn, useSandboxChat } from '../helpers/turns.ts'

/**
 * `sandbox/agent` through the API (issue 35): a whole tool loop offline, billed and kept as any
 * turn. The model's side is unit-tested in test/providers/sandbox/sandbox-agent.test.ts.
 */
const MOORING = {
  name: 'lookup_mooring',
  description: 'Finds a free mooring in a harbour.',
  input_schema: {
    type: 'object',
    properties: { harbour: { type: 'string', enum: ['Bergen', 'Oslo'] }, berths: { type: 'integer', minimum: 1 }, note: { type: 'string' } },
    required: ['harbour', 'berths'],
    additionalProperties: false,
  },
}

describe('sandbox/agent through the API', () => {
  const s = useSandboxChat()

  it('a tool loop: the first turn calls the offered tool with arguments its schema takes, the tool result is answered in text; both billed and in the history', async () => {
    const call = await turn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/agent', tools: [MOORING], input: [{ type: 'prompt', text: 'Find me a mooring for tonight' }] })
    const done = call.of('done')[0]!.data
    expect(done.stop_reason).toBe('tool_use')
    expect(deltaText(call.frames, 'text')).toBe('')
    const pending = done.pending_tool_calls as { tool_use_id: string; tool_name: string }[]
    expect(pending.map((p) => p.tool_name)).toEqual(['lookup_mooring'])

    const parts = (await history(s.ctx, s.org.auth, s.chatId)).data as { part: { type: string; tool_name?: string; arguments?: string } }[]
    const toolCall = parts.find((p) => p.part.type === 'tool_call')!.part
    expect(new Ajv({ strict: false }).validate(MOORING.input_schema, JSON.parse(toolCall.arguments!))).toBe(true)

    const answered = await turn(s.ctx, s.org.auth, s.chatId, {
      model: 'sandbox/agent',
      tools: [MOORING],
      input: [{ type: 'tool_result', tool_use_id: pending[0]!.tool_use_id, tool_name: 'lookup_mooring', text: 'berth 12 in Bergen is free' }],
    })
    expect(answered.frames[0]!.data.closed_tool_calls).toEqual([pending[0]!.tool_use_id])
    expect(deltaText(answered.frames, 'text')).toBe('echo: berth 12 in Bergen is free')
    expect(answered.of('done')[0]!.data.stop_reason).toBe('end_turn')

    for (const runId of [call.runId, answered.runId]) {
      const run = await getRun(s.ctx, s.org.auth, runId)
      expect(run.status).toBe('succeeded')
      expect(Number(run.cost)).toBeGreaterThan(0)
    }
  })

  it('without tools it is echo', async () => {
    const t = await turn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/agent', input: [{ type: 'prompt', text: 'hello there' }] })
    expect(deltaText(t.frames, 'text')).toBe('echo: hello there')
    expect(t.of('done')[0]!.data.stop_reason).toBe('end_turn')
  })
})
