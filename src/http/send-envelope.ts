import type { FastifyReply } from 'fastify'
import { isFacadePath, toOpenAIError } from './openai/openai-error.ts'

export type EnvelopeBody = { code: string; message: string; details?: unknown; hint?: string | null }

/**
 * OpenAI's error has no field for a hint, so on the facade's paths it is carried in the message,
 * after it (decision 060): a client that shows the message shows what to do about it too.
 */
export function withHintInMessage(body: EnvelopeBody): EnvelopeBody {
  return body.hint ? { ...body, message: `${body.message}; ${body.hint}` } : body
}

/**
 * Every error answer leaves through here: Parley's envelope (docs/guide/errors.md), or on the
 * OpenAI facade's paths the same error as OpenAI shapes it (decision 055), its hint in the message.
 */
export function sendEnvelope(reply: FastifyReply, status: number, body: EnvelopeBody): FastifyReply {
  if (isFacadePath(reply.request.url)) {
    const translated = toOpenAIError(status, withHintInMessage(body))
    return reply.code(translated.status).send(translated.body)
  }
  return reply.code(status).send({ error: body })
}
