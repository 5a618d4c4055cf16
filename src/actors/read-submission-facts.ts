import type { LedgerView } from '../../machines/chat.types.ts'
import type { Store } from '../store/index.ts'
import type { Submission } from './turn-types.ts'

/**
 * What the ledger says of a submission, read just before it is handed to the chat's actor (both
 * synchronous, so nothing is written in between): the chat's running customer run, whoever streams
 * it; the run `retry_of` names, if the organisation has it; the run that used the idempotency key
 * within 24 h. The machine decides on these (machines/chat.machine.ts, docs/guide/runs.md); admission
 * checks the key again where it writes, since another chat may take it meanwhile.
 */
export function readSubmissionFacts(store: Store, submission: Submission, now: Date): LedgerView {
  const { request, orgId, chatId } = submission
  const retried = request.retry_of ? store.runs.get(orgId, request.retry_of) : undefined
  return {
    runningRun: store.runs.runningCustomerRun(chatId),
    at: now.toISOString(),
    retried: retried ? { id: retried.id, chatId: retried.chat_id } : null,
    keyUsedBy: request.idempotency_key ? store.idempotencyKeys.runOf(orgId, request.idempotency_key, now) : null,
  }
}
