import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { LEDGER_WRITE_FAILED } from '../../../src/actors/execute-run.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'
import { finishPart, fundedOrg, getRun, history, newChat, prompt, sandboxCatalogue, scriptedModel, turn, usageEntries, variantOf, withFakes } from '../../helpers/turns.ts'

const TWO_BLOCKS = variantOf('fake/two-blocks', '5b7a0c1e-3333-4b2b-8c2c-000000000001', { provider: 'fake', vendor_model_id: 'two-blocks' })

let ctx: TestContext
let org: TestOrg
let chatId: string

beforeEach(async () => {
  ctx = await createTestApp({
    catalogue: [...sandboxCatalogue(), TWO_BLOCKS],
    languageModelFor: withFakes({
      // Two text blocks, then a finish: the second block's write is the one that fails.
      'two-blocks': scriptedModel(async (emit) => {
        emit({ type: 'text-start', id: 'a' })
        emit({ type: 'text-delta', id: 'a', delta: 'first' })
        emit({ type: 'text-end', id: 'a' })
        emit({ type: 'text-start', id: 'b' })
        emit({ type: 'text-delta', id: 'b', delta: 'second' })
        emit({ type: 'text-end', id: 'b' })
        emit(finishPart())
      }),
    }),
  })
  org = fundedOrg(ctx)
  chatId = await newChat(ctx, org.auth)
  // The ledger refuses the run's second block.
  const append = ctx.store.parts.append
  ctx.store.parts.append = (chat, parts) => {
    if (parts.some((p) => p.body.type === 'message' && p.body.text === 'second')) throw new Error('SQLITE_IOERR: disk I/O error')
    return append(chat, parts)
  }
})
afterEach(async () => {
  await ctx.close()
})

describe('a ledger write failure mid-stream', () => {
  it('ends the run as failed with code internal, not upstream_error: no block_stop for the unwritten block, no done', async () => {
    const t = await turn(ctx, org.auth, chatId, { model: TWO_BLOCKS.name, input: [prompt('hello')] })
    expect(t.events.slice(t.events.indexOf('block_start'))).toEqual(['block_start', 'delta', 'block_stop', 'block_start', 'delta', 'error'])
    const error = t.of('error')[0]!.data
    expect(error).toMatchObject({ code: 'internal', message: LEDGER_WRITE_FAILED, details: { run_id: t.runId } })
    // No internals on the wire.
    expect(JSON.stringify(error)).not.toContain('SQLITE')

    const run = await getRun(ctx, org.auth, t.runId)
    expect(run).toMatchObject({ status: 'failed', error: LEDGER_WRITE_FAILED })
    // The run is billed for what the provider reported, as for any other failure.
    expect(usageEntries(ctx.store, t.runId)).toHaveLength(1)
    // Our failure says nothing of the provider's health: no uptime sample.
    expect(ctx.store.db.prepare('SELECT count(*) AS n FROM provider_calls').get()).toEqual({ n: 0 })

    // The block written before the failure is in the ledger; the refused one is not.
    const page = await history(ctx, org.auth, chatId)
    const messages = page.data.filter((p: { part: { type: string } }) => p.part.type === 'message').map((p: { part: { text: string } }) => p.part.text)
    expect(messages).toEqual(['first'])
  })
})
