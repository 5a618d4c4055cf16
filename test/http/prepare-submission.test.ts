import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { decodeSubmission, prepareSubmission } from '../../src/http/prepare-submission.ts'
import { decodeAttachment } from '../../src/domain/turns/decode-attachment.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { echo } from '../helpers/turns.ts'
import { PNG_3X2, PNG_3X2_B64 } from '../helpers/media-fixtures.ts'

describe('prepareSubmission', () => {
  it("holds an attachment by its hash: the submission the chat's actor keeps carries neither base64 nor bytes, which go beside it (issue 34, decision 049)", async () => {
    const request: TurnRequest = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'look', media: [{ mime: 'image/png', data_base64: PNG_3X2_B64 }] }], retry_of: null }
    const decoded = await decodeSubmission(request, echo(), { decodeAttachment: async (input) => decodeAttachment(input) })
    const { submission, attachments } = prepareSubmission(request, echo(), { orgId: 'org', apiKeyId: null, chatId: 'chat', namespace: null }, decoded)
    const sha256 = createHash('sha256').update(PNG_3X2).digest('hex')
    expect(submission.input[0]!.media).toEqual([{ mime: 'image/png', sha256, byte_len: PNG_3X2.length, filename: null, width: 3, height: 2, page_count: null }])
    expect(attachments.get(sha256)!.equals(PNG_3X2)).toBe(true)
    // Plain data: nothing in it is a Buffer, and the base64 is gone.
    expect(JSON.parse(JSON.stringify(submission.input))).toEqual(submission.input)
    expect(JSON.stringify(submission.request)).not.toContain(PNG_3X2_B64)
    expect(submission.request.retry_of).toBeNull()
    expect(submission.request.model).toBe('sandbox/echo')
  })
})
