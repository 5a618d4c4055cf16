import { beforeEach, describe, expect, it } from 'vitest'
import { expectError } from '../helpers/http.ts'
import type { TestContext, TestOrg } from '../helpers/test-app.ts'
import { postTurn, prompt, streamOf, useSandboxChat } from '../helpers/turns.ts'

/**
 * Issue 13: after the sandbox's `/flaky` line, the 502 said "send the same turn again with
 * retry_of", which answers 422 (a retry's input must be empty), and its message named `/fail`.
 * Following the hint word for word must now work.
 */
// One app for the file, a fresh funded organisation and chat for each test (test/helpers/turns.ts).
const sandbox = useSandboxChat()
let ctx: TestContext
let org: TestOrg
let chatId: string
beforeEach(() => {
  ;({ ctx, org, chatId } = sandbox)
})

describe('/flaky', () => {
  it('fails with a message naming /flaky and a hint that, followed as written, retries the run', async () => {
    const failed = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/flaky\nhello')] })
    const error = expectError(failed, 502, 'upstream_error') as { message: string; details: { run_id: string }; hint?: string }
    expect(error.message).toContain('(/flaky')
    expect(error.message).not.toContain('/fail')
    const runId = error.details.run_id
    expect(error.hint).toBe(`send input: [] with retry_of: "${runId}" to try this turn again`)

    // What the hint says: input [] and retry_of the run's id.
    const hinted = JSON.parse(`{${/input: \[\] with (retry_of: "[^"]+")/.exec(error.hint!)![1]!.replace('retry_of', '"retry_of"')}}`)
    const retried = streamOf(await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [], ...hinted }))
    expect(retried.of('done')).toHaveLength(1)
    expect(retried.of('done')[0]!.data.stop_reason).toBe('end_turn')
  })

  it('the old hint (the same turn again with retry_of) is the 422 it was: the hint no longer says so', async () => {
    const failed = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/flaky\nhello')] })
    const runId = failed.json().error.details.run_id
    const sameTurn = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/flaky\nhello')], retry_of: runId })
    expect(sameTurn.statusCode).toBe(422)
    expect(failed.json().error.hint).not.toMatch(/same turn/)
  })

  it('/fail still names /fail', async () => {
    const failed = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/fail')] })
    const error = expectError(failed, 502, 'upstream_error')
    expect(error.message).toContain('(/fail)')
  })
})
