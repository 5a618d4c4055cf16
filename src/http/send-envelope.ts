import type { FastifyReply } from 'fastify'
import { isFacadePath, toOpenAIError } from './openai/openai-error.ts'

export type EnvelopeBody = { code: string; message: string; details?: unknown; hint?: string | null }

/**
 * Every error answer leaves through here: Parley's envelope (docs/guide/errors.md), or on the
 * OpenAI facade's paths the same error as OpenAI shapes it (decision 055).
 */
export function sendEnvelope(reply: FastifyReply, status: number, body: EnvelopeBody): FastifyReply {
  if (isFacadePath(reply.request.url)) {
    const translated = toOpenAIError(status, body)
    return reply.code(translated.status).send(translated.body)
  }
  return reply.code(status).send({ error: body })
}
