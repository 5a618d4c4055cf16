import { beforeEach, describe, expect, it } from 'vitest'
import { countRows, expectError } from '../helpers/http.ts'
import type { TestContext, TestOrg } from '../helpers/test-app.ts'
import { postTurn, prompt, totalRows, turn, useSandboxChat } from '../helpers/turns.ts'

/** Issue 13: PNG bytes declared image/jpeg were accepted and stored as image/jpeg. */
const PNG_3X2 = 'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAG0lEQVR4nAXBAQEAAACCIDe5qbHOCgCHIeSyPCtwBd1HI03nAAAAAElFTkSuQmCC'

// One app for the file, a fresh funded organisation and chat for each test (test/helpers/turns.ts).
const sandbox = useSandboxChat()
let ctx: TestContext
let org: TestOrg
let chatId: string
beforeEach(() => {
  ;({ ctx, org, chatId } = sandbox)
})

describe('attachments whose bytes disagree with their declared type', () => {
  it('PNG bytes declared image/jpeg: 422 unsupported_attachment with a pointer, and nothing written', async () => {
    const before = { parts: countRows(ctx.store, 'parts'), runs: totalRows(ctx.store, 'runs') }
    const res = await postTurn(ctx, org.auth, chatId, {
      model: 'sandbox/echo',
      input: [prompt('a caption'), prompt('look', { media: [{ mime: 'image/png', data_base64: PNG_3X2 }, { mime: 'image/jpeg', data_base64: PNG_3X2, filename: 'photo.jpg' }] })],
    })
    const error = expectError(res, 422, 'unsupported_attachment') as { message: string; details: { problems: { in: string; pointer: string; message: string }[] } }
    expect(error.details.problems).toEqual([
      { in: 'body', pointer: '/input/1/media/1/mime', message: 'is declared image/jpeg but its bytes are PNG (image/png): declare the type the bytes are' },
    ])
    expect(error.message).toContain('image/jpeg')
    expect({ parts: countRows(ctx.store, 'parts'), runs: totalRows(ctx.store, 'runs') }).toEqual(before)
  })

  it('text declared application/pdf: 422 at its pointer', async () => {
    const res = await postTurn(ctx, org.auth, chatId, {
      model: 'sandbox/echo',
      input: [{ type: 'prompt', media: [{ mime: 'application/pdf', data_base64: Buffer.from('just some text').toString('base64') }] }],
    })
    const error = expectError(res, 422, 'unsupported_attachment') as { details: { problems: { pointer: string }[] } }
    expect(error.details.problems.map((p) => p.pointer)).toEqual(['/input/0/media/0/mime'])
  })

  it('the same PNG declared image/png is accepted and stored as image/png', async () => {
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('look', { media: [{ mime: 'image/png', data_base64: PNG_3X2 }] })] })
    expect(t.of('done')).toHaveLength(1)
    const page = (await ctx.app.inject({ method: 'GET', url: `/api/v1/chats/${chatId}/history?include=stubs`, headers: org.auth })).json()
    const media = page.data.find((p: { part: { type: string } }) => p.part.type === 'prompt').media
    expect(media).toEqual([expect.objectContaining({ mime: 'image/png', width: 3, height: 2 })])
  })
})
