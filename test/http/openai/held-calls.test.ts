import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHeldCalls } from '../../../src/http/openai/chat-completion.ts'
import type { AppDeps } from '../../../src/http/app-deps.ts'

/** Stateless completions that ended in tool calls keep their chat for a while, then delete it (decision 063). */
const depsDeleting = () => {
  const deleted: string[] = []
  return { deps: { host: { delete: async (_org: string, chatId: string) => void deleted.push(chatId) } } as unknown as AppDeps, deleted }
}

afterEach(() => vi.useRealTimers())

describe('createHeldCalls', () => {
  it('hands a held run to the same organisation with all its calls, once', () => {
    const { deps } = depsDeleting()
    const held = createHeldCalls(deps)
    held.hold('org', 'run', 'chat', ['call_a', 'call_b'])
    expect(held.take('other', ['call_a', 'call_b'])).toBeNull()
    expect(held.take('org', ['call_a', 'call_x'])).toBeNull()
    expect(held.take('org', ['call_a', 'call_b'])).toEqual({ runId: 'run', chatId: 'chat' })
    expect(held.take('org', ['call_a', 'call_b'])).toBeNull()
    expect(held.size).toBe(0)
  })

  it('deletes a chat whose results never came once the time is up, and the oldest when full', async () => {
    vi.useFakeTimers()
    const { deps, deleted } = depsDeleting()
    const held = createHeldCalls(deps, { ttlMs: 1000, max: 2 })
    held.hold('org', 'r1', 'c1', ['a'])
    held.hold('org', 'r2', 'c2', ['b'])
    held.hold('org', 'r3', 'c3', ['c'])
    expect(deleted).toEqual(['c1'])
    vi.advanceTimersByTime(1001)
    expect(deleted).toEqual(['c1', 'c2', 'c3'])
    expect(held.size).toBe(0)
  })

  it('deletes every held chat when the node closes', async () => {
    const { deps, deleted } = depsDeleting()
    const held = createHeldCalls(deps)
    held.hold('org', 'r1', 'c1', ['a'])
    await held.close()
    expect(deleted).toEqual(['c1'])
    expect(held.take('org', ['a'])).toBeNull()
  })
})
