import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ValidationError } from '../../src/domain/errors.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, history, newChat, postTurn, sandboxCatalogue, streamOf, turn, waitForFrame } from '../helpers/turns.ts'

let ctx: TestContext
let org: TestOrg

beforeEach(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  org = fundedOrg(ctx)
})
afterEach(async () => {
  await ctx.close()
})

const labels = { title: null, description: null, userMetadata: {} }

describe('fork through the source chat actor (docs/decisions/037-fork.md)', () => {
  it('while the source runs a turn, copies only the parts before it; an ordinal inside it is refused; the run ends as usual', async () => {
    const source = await newChat(ctx, org.auth)
    await turn(ctx, org.auth, source, { input: [{ type: 'prompt', text: 'settled' }] })
    const settled = (await history(ctx, org.auth, source)).data
    const pending = postTurn(ctx, org.auth, source, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 20\n/long 30' }] })
    await new Promise<void>((resolve) => {
      const look = () => (ctx.store.runs.runningCustomerRun(source) ? resolve() : setTimeout(look, 2))
      look()
    })
    const runId = ctx.store.runs.runningCustomerRun(source)!.id
    await waitForFrame(ctx, source, runId, 'delta')
    // The running turn's prompt is in the ledger, under its run: not settled.
    const during = (await history(ctx, org.auth, source)).data
    expect(during.length).toBeGreaterThan(settled.length)

    // Decided at once by the actor, while the turn still runs (the copies below take longer: a thread).
    const refused = ctx.host.fork(org.orgId, source, { ...labels, upToOrdinal: during.at(-1).ordinal })
    const forking = ctx.host.fork(org.orgId, source, labels)
    await expect(refused).rejects.toBeInstanceOf(ValidationError)
    const fork = await forking
    const copied = (await history(ctx, org.auth, fork!.id)).data
    expect(copied.map((p) => p.part)).toEqual(settled.map((p) => p.part))
    // The settled part just before the running turn is a valid cut.
    const atEdge = await ctx.host.fork(org.orgId, source, { ...labels, upToOrdinal: settled.at(-1).ordinal })
    expect((await history(ctx, org.auth, atEdge!.id)).data).toHaveLength(settled.length)

    const finished = streamOf(await pending)
    expect(finished.events.at(-1)).toBe('done')
    // Once the run has ended, its parts are settled and copied.
    const whole = await ctx.host.fork(org.orgId, source, labels)
    expect((await history(ctx, org.auth, whole!.id)).data.map((p) => p.part)).toEqual((await history(ctx, org.auth, source)).data.map((p) => p.part))
  })

  it('a fork of another organisation’s chat is null, as a missing one', async () => {
    const other = fundedOrg(ctx)
    const foreign = await newChat(ctx, other.auth)
    expect(await ctx.host.fork(org.orgId, foreign, labels)).toBeNull()
  })
})
