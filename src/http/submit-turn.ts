import type { RunEventSource } from '../actors/run-channel.ts'
import { admissionOf, nextEvent, settledOf } from '../actors/run-channel.ts'
import { retiredMessage } from '../domain/catalogue/lifecycle.ts'
import { ValidationError } from '../domain/errors.ts'
import { inactiveModelError } from '../providers/catalogue/inactive-model.ts'
import type { Submission, TurnRequest } from '../domain/turns/submission.ts'
import type { ChatRow } from '../store/chats.ts'
import type { AppDeps } from './app-deps.ts'
import type { BodyWork } from './body-work/body-work.ts'
import { decodeSubmission, prepareSubmission } from './prepare-submission.ts'

export type TurnCaller = { orgId: string; apiKeyId: string | null }

/**
 * A turn checked and made ready for its chat's actor, without submitting it: the model resolved,
 * the input decoded and checked. The one preparation a turn and a count of its input share.
 */
export async function prepareTurn(
  deps: AppDeps,
  bodyWork: Pick<BodyWork, 'decodeAttachment'>,
  caller: TurnCaller,
  chat: Pick<ChatRow, 'id' | 'namespace'>,
  body: TurnRequest,
) {
  // An imported catalogue version is taken up at once (decision 041); the check is one indexed read.
  deps.catalogue.checkVersion()
  const resolved = deps.catalogue.resolve(body.model)
  if (resolved.kind === 'retired') {
    // Decision 041: a retired model is refused with its successor named, never swapped in silently.
    throw new ValidationError([{ in: 'body', pointer: '/model', message: retiredMessage(resolved) }])
  }
  if (resolved.kind === 'unknown') {
    // Issue 38: the refusal names the models this node serves and how a vendor is turned on.
    throw inactiveModelError(body.model, deps.catalogue.list())
  }
  const model = resolved.entry
  // Attachments are read whole off the event loop when large (src/http/body-work/body-work.ts).
  const decoded = await decodeSubmission(body, model, bodyWork)
  return prepareSubmission(body, model, { ...caller, chatId: chat.id, namespace: chat.namespace }, decoded)
}

/**
 * A turn submitted to its chat's actor, up to the moment its stream opens: the one path the native
 * turn route and the OpenAI facade share (decision 055). Resolves the model, decodes and checks the
 * input, hands the submission to the actor and waits for its decision. A refusal, and a failure
 * before the vendor's first byte (once its run is committed failed), are thrown as domain errors.
 */
export async function submitTurn(
  deps: AppDeps,
  bodyWork: Pick<BodyWork, 'decodeAttachment'>,
  caller: TurnCaller,
  chat: Pick<ChatRow, 'id' | 'namespace'>,
  body: TurnRequest,
  extra: Pick<Submission, 'openaiRequest' | 'newChat'> = {},
): Promise<{ runId: string; events: RunEventSource }> {
  const { submission, attachments } = await prepareTurn(deps, bodyWork, caller, chat, body)
  // The submission's event log is all this reads of the actors (src/actors/run-channel.ts).
  const events = deps.host.submit({ ...submission, ...extra }, attachments)
  const runId = await admissionOf(events)
  // A provider that fails before its first byte is an HTTP error, not a stream (docs/guide/turn-stream.md).
  const { event: opening } = await nextEvent(events, ['opened', 'failed_before_stream'])
  if (opening.type === 'failed_before_stream') {
    // Answered once the run's failure is committed: a GET of the run then reads it failed.
    await settledOf(events)
    throw opening.error
  }
  return { runId, events }
}
