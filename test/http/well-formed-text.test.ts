import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { countRows, expectProblem } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, postTurn, prompt, sandboxCatalogue, snapshotRows, turn } from '../helpers/turns.ts'

/**
 * Issue 22 item 4: a string with a lone surrogate cannot be stored as UTF-8. Every JSON body is
 * checked in one place, so each route answers 422 at the string's pointer and writes nothing
 * (docs/decisions/031-well-formed-text.md).
 */

const LONE_HIGH = '\ud800'
const LONE_LOW = '\udc00'
const FACE = '\u{1f600}' // one character, two UTF-16 units

let ctx: TestContext
let org: TestOrg
// One app for the file (building one per test was most of this file's time); each test gets fresh
// organisations and chats of its own.
beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(async () => {
  chatsAtStart = countRows(ctx.store, 'chats')
  org = fundedOrg(ctx)
})
// Rows this test added: the app and its database are the file's (counting from the test's start is
// what counting from an empty database was).
let chatsAtStart = 0
const chatsAdded = () => countRows(ctx.store, 'chats') - chatsAtStart

const createChat = (body: Record<string, unknown>) => ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: body })

describe('lone surrogates answer 422 at their pointer', () => {
  it('a title of 50 lone surrogates: 422 at /title, no chat written', async () => {
    const res = await createChat({ title: LONE_HIGH.repeat(50) })
    const problems = expectProblem(res, 'body', '/title')
    expect(problems.find((p) => p.pointer === '/title')!.message).toContain('lone surrogate')
    expect(chatsAdded()).toBe(0)
  })

  it('a description with a lone low surrogate among text, and a user_metadata string', async () => {
    const res = await createChat({ description: `fine ${LONE_LOW} text`, user_metadata: { tags: ['ok', `x${LONE_HIGH}`] } })
    expectProblem(res, 'body', '/description')
    expectProblem(res, 'body', '/user_metadata/tags/1')
    expect(chatsAdded()).toBe(0)
  })

  it('a property name with a lone surrogate points at the object that holds it', async () => {
    const res = await createChat({ user_metadata: { [`k${LONE_HIGH}`]: 'v' } })
    const problems = expectProblem(res, 'body', '/user_metadata')
    expect(problems[0]!.message).toContain('property name')
  })

  it('a prompt, a tool result and tool arguments schema on the turn route: 422, nothing written', async () => {
    const chatId = await newChat(ctx, org.auth)
    const before = snapshotRows(ctx.store)
    const res = await postTurn(ctx, org.auth, chatId, {
      model: 'sandbox/echo',
      input: [prompt(`hello ${LONE_HIGH}`)],
      tools: [{ name: 'lookup', description: `finds ${LONE_LOW}`, input_schema: { type: 'object', properties: {} } }],
    })
    expectProblem(res, 'body', '/input/0/text')
    expectProblem(res, 'body', '/tools/0/description')
    expect(snapshotRows(ctx.store)).toEqual(before)
  })

  it('instructions in a configuration document', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/config/instructions', headers: org.auth, payload: { body: `be brief${LONE_HIGH}`, mode: 'replace' } })
    expectProblem(res, 'body', '/body')
  })
})

describe('limits count the characters stored', () => {
  it('a title of 50 characters outside the BMP (100 UTF-16 units) is accepted and read back as sent', async () => {
    const title = FACE.repeat(50)
    const res = await createChat({ title, description: FACE.repeat(200) })
    expect(res.statusCode, res.body).toBe(201)
    const chat = (await ctx.app.inject({ method: 'GET', url: `/api/v1/chats/${res.json().id}`, headers: org.auth })).json()
    expect(chat.title).toBe(title)
    expect(chat.description).toBe(FACE.repeat(200))
  })

  it('51 such characters are refused at /title, 201 at /description', async () => {
    expectProblem(await createChat({ title: FACE.repeat(51) }), 'body', '/title')
    expectProblem(await createChat({ description: FACE.repeat(201) }), 'body', '/description')
  })

  it('a well-formed prompt with pairs still streams', async () => {
    const chatId = await newChat(ctx, org.auth)
    const t = await turn(ctx, org.auth, chatId, { input: [prompt(`hi ${FACE}`)] })
    expect(t.of('done')).toHaveLength(1)
  })
})
