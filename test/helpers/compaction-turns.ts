import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import type { Store } from '../../src/store/index.ts'
import type { Auth } from './http.ts'
import type { TestContext } from './test-app.ts'
import { postTurn } from './turns.ts'

const WORDS = 'harbour lantern estuary kingfisher driftwood willowherb cobblestone nightingale'.split(' ')

/** About `tokens` tokens of prose, different for each seed. */
export const prose = (seed: number, tokens: number) => {
  const words = [`Turn ${seed}:`]
  for (let i = seed; estimateTokens(words.join(' ')) < tokens; i = (i * 7 + 3) % 997) words.push(WORDS[i % WORDS.length]!)
  return words.join(' ')
}

/** Waits until `what` holds, looking every 5 ms; throws after `ms`. */
export const until = async (what: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 5))
  }
}

/**
 * With the sandbox's compaction gate closed, grows the chat (up to 12 turns) until the first turn
 * that needs a summary: that one is held at the gate and its response comes back still pending
 * (wrapped, so that returning it does not await it); null when no turn needed one.
 */
export async function growUntilHeldAtGate(
  ctx: TestContext,
  auth: Auth,
  chatId: string,
  sandbox: { readonly entered: readonly string[] },
): Promise<{ pending: ReturnType<typeof postTurn> | null }> {
  let pending: ReturnType<typeof postTurn> | null = null
  for (let i = 0; i < 12 && pending === null; i++) {
    const before = ctx.store.runs.latestCustomerRun(chatId)?.id
    const res = postTurn(ctx, auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i, 600) }] })
    await until(() => {
      const latest = ctx.store.runs.latestCustomerRun(chatId)
      return latest !== undefined && latest.id !== before && (sandbox.entered.length > 0 || latest.status !== 'running')
    })
    if (sandbox.entered.length > 0) pending = res
    else await res
  }
  return { pending }
}

/** A chat's compaction runs, oldest first. */
export const compactionRunsOf = (store: Store, chatId: string) =>
  store.db.prepare(`SELECT id, status, manifest FROM runs WHERE chat_id = ? AND origin = 'compaction' ORDER BY created_at, rowid`).all(chatId) as {
    id: string
    status: string
    manifest: string
  }[]
