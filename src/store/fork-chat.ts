import type { PartBody } from '../domain/parts.ts'
import type { PendingCall } from '../domain/turns/close-pending-calls.ts'
import type { LatestRun } from '../domain/turns/decide-admission.ts'
import type { ForkLedgerView } from '../domain/chats/fork-cut.ts'
import { newId } from '../domain/new-id.ts'
import type { ChatRow } from './chats.ts'
import { wallClock, type Clock, type Db } from './database.ts'

export type NewFork = {
  orgId: string
  sourceChatId: string
  /** Copy the source's parts with ordinals up to this one; null copies none. */
  upTo: number | null
  title: string | null
  description: string | null
  userMetadata: unknown
}

/** The SQL function the copies call for each new part and media id (a UUIDv7, like every id). */
export const NEW_ID_FUNCTION = 'parley_new_id'

/**
 * The fork's copies (docs/decisions/037-fork.md): each one INSERT … SELECT over the source's rows,
 * prepared once. Ordinals are shifted by one offset (`@delta`): the fork's ordinals keep the source's
 * order and gaps, sit above every ordinal used so far, and the summaries' ranges shift with them.
 */
export const FORK_PARTS_SQL = `INSERT INTO parts (ordinal, id, chat_id, run_id, kind, body, user_metadata, created_at, tokens, answer_index)
  SELECT ordinal + @delta, ${NEW_ID_FUNCTION}(), @fork, run_id, kind, body, user_metadata, created_at, tokens, answer_index
  FROM parts WHERE chat_id = @source AND ordinal <= @upTo ORDER BY ordinal`
export const FORK_MEDIA_SQL = `INSERT INTO part_media (media_id, part_ordinal, position, sha256, mime, byte_len, filename, width, height, page_count)
  SELECT ${NEW_ID_FUNCTION}(), m.part_ordinal + @delta, m.position, m.sha256, m.mime, m.byte_len, m.filename, m.width, m.height, m.page_count
  FROM parts p JOIN part_media m ON m.part_ordinal = p.ordinal
  WHERE p.chat_id = @source AND p.ordinal <= @upTo`
export const FORK_SUMMARIES_SQL = `INSERT INTO summaries (chat_id, first_ordinal, last_ordinal, text, tokens, run_id, created_at, merged)
  SELECT @fork, first_ordinal + @delta, last_ordinal + @delta, text, tokens, run_id, created_at, merged
  FROM summaries WHERE chat_id = @source AND last_ordinal <= @upTo`

export function createForkStore(db: Db, clock: Clock = wallClock) {
  db.function(NEW_ID_FUNCTION, { deterministic: false }, () => newId())

  const sourceChat = db.prepare<[string, string], ChatRow>('SELECT * FROM chats WHERE id = ? AND org_id = ?')
  const insertChat = db.prepare(
    `INSERT INTO chats (id, org_id, namespace, title, description, user_metadata, part_count, created_at, updated_at)
     VALUES (@id, @org, @namespace, @title, @description, @metadata, 0, @now, @now)`,
  )
  const chatById = db.prepare<[string], ChatRow>('SELECT * FROM chats WHERE id = ?')
  const setCount = db.prepare<[number, string]>('UPDATE chats SET part_count = ? WHERE id = ?')
  // AUTOINCREMENT hands out ordinals above both; the fork's go above them too.
  const highestOrdinal = db.prepare<[], { top: number }>(
    `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'parts'), 0), coalesce((SELECT max(ordinal) FROM parts), 0)) AS top`,
  )
  const firstOrdinal = db.prepare<[string], { first: number | null }>('SELECT min(ordinal) AS first FROM parts WHERE chat_id = ?')
  const copyParts = db.prepare(FORK_PARTS_SQL)
  const copyMedia = db.prepare(FORK_MEDIA_SQL)
  const copySummaries = db.prepare(FORK_SUMMARIES_SQL)
  // The source's failed runs, its own and those it inherited: their output stays out of the fork's contexts.
  const inheritFailed = db.prepare(
    `INSERT OR IGNORE INTO inherited_runs (chat_id, run_id, status, pending)
     SELECT @fork, id, 'failed', 0 FROM runs WHERE chat_id = @source AND status = 'failed'
     UNION SELECT @fork, run_id, 'failed', 0 FROM inherited_runs WHERE chat_id = @source AND status = 'failed'`,
  )
  const lastCall = db.prepare<[string], { run_id: string | null; ordinal: number }>(
    `SELECT run_id, ordinal FROM parts WHERE chat_id = ? AND kind = 'tool_call' ORDER BY ordinal DESC LIMIT 1`,
  )
  const runStatus = db.prepare<[string], { status: string }>('SELECT status FROM runs WHERE id = ?')
  const markPending = db.prepare(
    `INSERT INTO inherited_runs (chat_id, run_id, status, pending) VALUES (@fork, @run, @status, 1)
     ON CONFLICT (chat_id, run_id) DO UPDATE SET pending = 1`,
  )
  const pendingRun = db.prepare<[string], { run_id: string; status: LatestRun['status'] }>(
    'SELECT run_id, status FROM inherited_runs WHERE chat_id = ? AND pending = 1',
  )
  const callsOfRun = db.prepare<[string, string], { ordinal: number; body: string; created_at: string }>(
    `SELECT ordinal, body, created_at FROM parts WHERE run_id = ? AND chat_id = ? AND kind = 'tool_call' ORDER BY ordinal`,
  )
  const resultsAfter = db.prepare<[string, number], { tool_use_id: string | null }>(
    `SELECT json_extract(body, '$.tool_use_id') AS tool_use_id FROM parts WHERE chat_id = ? AND ordinal > ? AND kind = 'tool_result'`,
  )
  const lastOrdinal = db.prepare<[string], { last: number | null }>('SELECT max(ordinal) AS last FROM parts WHERE chat_id = ?')
  const firstOfRun = db.prepare<[string, string], { first: number | null }>(
    'SELECT min(ordinal) AS first FROM parts WHERE run_id = ? AND chat_id = ?',
  )
  const lastBefore = db.prepare<[string, number], { last: number | null }>(
    'SELECT max(ordinal) AS last FROM parts WHERE chat_id = ? AND ordinal < ?',
  )

  /**
   * The tool calls of `runId` in the chat that no tool_result in the chat answers: at a fork's cut,
   * those its source had not closed by then.
   */
  function unansweredCalls(chatId: string, runId: string, runStatusNow: LatestRun['status']): PendingCall[] {
    const calls = callsOfRun.all(runId, chatId)
    if (calls.length === 0) return []
    const answered = new Set(resultsAfter.all(chatId, calls[0]!.ordinal).map((r) => r.tool_use_id))
    return calls.flatMap((row) => {
      const body = JSON.parse(row.body) as PartBody
      if (body.type !== 'tool_call' || answered.has(body.tool_use_id)) return []
      return [{ tool_use_id: body.tool_use_id, tool_name: body.tool_name, created_at: row.created_at, run_status: runStatusNow as PendingCall['run_status'] }]
    })
  }

  const fork = db.transaction((input: NewFork): ChatRow | null => {
    const source = sourceChat.get(input.sourceChatId, input.orgId)
    if (!source) return null
    const id = newId()
    const now = clock().toISOString()
    insertChat.run({
      id,
      org: input.orgId,
      namespace: source.namespace,
      title: input.title,
      description: input.description,
      metadata: JSON.stringify(input.userMetadata),
      now,
    })
    const first = input.upTo === null ? null : firstOrdinal.get(input.sourceChatId)!.first
    if (first !== null && input.upTo !== null && first <= input.upTo) {
      const delta = highestOrdinal.get()!.top + 1 - first
      const params = { fork: id, source: input.sourceChatId, upTo: input.upTo, delta }
      const copied = copyParts.run(params).changes
      copyMedia.run(params)
      copySummaries.run(params)
      inheritFailed.run({ fork: id, source: input.sourceChatId })
      setCount.run(copied, id)
      // A tool call left pending at the cut is pending in the fork: only the latest calling run's can be.
      const last = lastCall.get(id)
      if (last?.run_id) {
        const status = (runStatus.get(last.run_id)?.status ?? 'succeeded') as LatestRun['status']
        if (status !== 'running' && unansweredCalls(id, last.run_id, status).length > 0) {
          markPending.run({ fork: id, run: last.run_id, status })
        }
      }
    }
    return chatById.get(id)!
  })

  return {
    /**
     * Creates the fork and copies its rows, in one transaction; null when the organisation has no such
     * source chat. BEGIN IMMEDIATE: the copier's own connection takes the write lock first, waiting
     * out the busy timeout for it. A deferred transaction would read first and then fail at once with
     * SQLITE_BUSY (a 503) whenever the server committed in between, as it does while turns settle.
     */
    fork: (input: NewFork) => fork.immediate(input),
    /**
     * A fork's inherited pending calls, for a chat that made no customer run of its own yet (its
     * actor's hydration): the run that made them, as the latest run, and the calls still unanswered.
     */
    inheritedPending(chatId: string): { latest: LatestRun; calls: PendingCall[] } | null {
      const row = pendingRun.get(chatId)
      if (!row) return null
      return { latest: { id: row.run_id, status: row.status }, calls: unansweredCalls(chatId, row.run_id, row.status) }
    },
    /** What the fork rule reads of the source (src/domain/chats/fork-cut.ts), given the run the ledger shows running. */
    ledgerView(chatId: string, runningRunId: string | null): ForkLedgerView {
      const last = lastOrdinal.get(chatId)!.last
      if (last === null) return { lastOrdinal: null, lastSettledOrdinal: null }
      const running = runningRunId === null ? null : firstOfRun.get(runningRunId, chatId)!.first
      if (running === null) return { lastOrdinal: last, lastSettledOrdinal: last }
      return { lastOrdinal: last, lastSettledOrdinal: lastBefore.get(chatId, running)!.last }
    },
  }
}
