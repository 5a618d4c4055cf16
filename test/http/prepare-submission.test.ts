import { describe, expect, it } from 'vitest'
import { decodeSubmission, prepareSubmission } from '../../src/http/prepare-submission.ts'
import { decodeAttachment } from '../../src/domain/turns/decode-attachment.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { echo } from '../helpers/turns.ts'
import { PNG_3X2, PNG_3X2_B64 } from '../helpers/media-fixtures.ts'

describe('prepareSubmission', () => {
  it("holds an attachment once, decoded: the submission the chat's actor keeps carries no base64 (issue 34)", async () => {
    const request: TurnRequest = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'look', media: [{ mime: 'image/png', data_base64: PNG_3X2_B64 }] }], retry_of: null }
    const decoded = await decodeSubmission(request, echo(), { decodeAttachment: async (input) => decodeAttachment(input) })
    const submission = prepareSubmission(request, echo(), { orgId: 'org', apiKeyId: null, chatId: 'chat', namespace: null }, decoded)
    expect(submission.input[0]!.media[0]!.bytes.equals(PNG_3X2)).toBe(true)
    expect(JSON.stringify(submission.request)).not.toContain(PNG_3X2_B64)
    expect(submission.request.retry_of).toBeNull()
    expect(submission.request.model).toBe('sandbox/echo')
  })
})
