import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider'
import { PLATFORM_MARKUP_PERCENT } from '../domain/catalogue/apply-markup.ts'
import { addSegment, type ContextManifest } from '../domain/context/context-manifest.ts'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { jsonTextBytes } from '../domain/context/request-bytes.ts'
import { IdempotencyKeyReusedError, RunInProgressError, RunningRunsLimitError } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import type { TurnFacts } from '../domain/turns/admission-rules.ts'
import { coerceReasoningEffort } from '../domain/turns/coerce-reasoning-effort.ts'
import type { CallClosing } from '../domain/turns/decide-admission.ts'
import type { NewPart } from '../store/parts.ts'
import type { ResolvedConfiguration } from '../store/config-resolution.ts'
import { DEFAULT_MAX_RUNNING_RUNS_PER_ORG } from '../settings.ts'
import { assembleTurn, budgetFactsOf, type TurnFrame } from './assemble-turn.ts'
import type { RunChannel } from './run-channel.ts'
import type { RunDeps } from './run-deps.ts'
import { openRun } from './run-lifecycle.ts'
import { newPartMedia, type PackedTurn, type PackRequest } from './context-history.ts'
import type { Compactor } from './compactor.ts'
import type { Admission, CompactionReport, Submission } from './turn-types.ts'
import type { DecodedMedia } from '../domain/turns/submission.ts'
import { turnInstructions, unmetToolChoice } from '../domain/turns/turn-options.ts'
import { estimateTokens, saturatingAdd } from '../domain/tokens/estimate-tokens.ts'

/**
 * What readTurn read and packed for a submission, kept by the chat's runtime (src/actors/chat-runtime.ts)
 * under its request id until the machine's turn rules let writeTurn write it: not data (the new parts
 * hold the attachments' bytes, read from the host's holder by hash), so it never enters the machine.
 */
export type ReadTurn = {
  frame: TurnFrame
  /** null when nothing was packed: over the running-run cap, or the fixed parts did not fit. */
  packed: PackedTurn | null
  /** The parts the turn writes: tombstones for unanswered calls, then the submission's input. */
  newBodies: { body: PartBody; media: DecodedMedia[]; tokens: number }[]
  /** The service clock's time of the reading: the run's creation, the idempotency key's use. */
  now: Date
}

/**
 * The read half of admission (the chat machine's invoked `readTurn`), for a turn the machine let
 * through its submission rules (retry, idempotency, tool ids; how the pending calls close): reads the
 * organisation's running runs (decision 033: first, before anything is spent on packing), the
 * configuration and budget in force (a retry uses current configuration too), the balance, and
 * packs the history (docs/guide/context.md). Writes nothing. The machine gets the facts its turn rules
 * (src/domain/turns/admission-rules.ts TURN_RULES) decide on, as data; the packed turn is the runtime's.
 */
export function readTurn(
  deps: RunDeps,
  submission: Submission,
  closing: CallClosing,
  /** The bytes an attachment's hash names (src/actors/attachment-holder.ts): the submission holds none. */
  bytesOf: (sha256: string) => Buffer,
): { facts: TurnFacts; read: ReadTurn } {
  const { store } = deps
  const { request, model, orgId } = submission
  const now = deps.now()
  const cap = deps.maxRunningRunsPerOrg ?? DEFAULT_MAX_RUNNING_RUNS_PER_ORG
  const runningRuns = { count: store.runs.runningCustomerRunsOfOrg(orgId, cap), cap }
  const retryOf = request.retry_of ?? null

  const config = deps.resolver.resolveConfig(orgId, submission.namespace, request.tools ?? null)
  const budget = deps.resolver.resolveBudget(orgId, submission.namespace, model.id)
  // Our estimate as this model's vendor counts it (docs/decisions/027-model-limits.md): packing and max_tokens use it.
  const correction = store.tokenCorrections.correctionFor(model.id)

  // The current exchange: what this submission writes, the run it retries, and the run whose calls
  // it closes (its calls stay with their results).
  const currentRuns = [...(retryOf ? [retryOf] : []), ...(closing.closesCallsOf ? [closing.closesCallsOf] : [])]
  const newBodies = [
    ...closing.tombstones.map((body) => ({ body: body as PartBody, media: [] as DecodedMedia[], tokens: estimatePartTokens(body) })),
    ...submission.input.map((part) => ({
      body: part.body,
      seeded: part.seeded === true,
      tokens: part.tokens,
      media: part.media.map(({ byte_len: _, ...ref }): DecodedMedia => ({ ...ref, bytes: bytesOf(ref.sha256) })),
    })),
  ]
  const tools = providerToolsOf(config)
  // The turn's own instruction after the configured ones, counted with them (docs/guide/turn-options.md).
  const instructions = turnInstructions(config.instructions, request.instructions)
  const instructionsTokens = request.instructions ? saturatingAdd(config.tokens.instructions, estimateTokens(request.instructions)) : config.tokens.instructions
  const toolChoice = unmetToolChoice(request.tool_choice, tools.map((t) => t.name))
  const packRequest: PackRequest = {
    newParts: newBodies.map((p, i) => ({ body: p.body, media: newPartMedia(p.media, i) })),
    currentRuns,
    instructionsTokens,
    toolsTokens: config.tokens.tools,
    // Against the vendor's request limit (decision 045): the instructions and the tools as the request carries them.
    instructionsAndToolsBytes: jsonTextBytes(instructions ?? '') + jsonTextBytes(JSON.stringify(tools)),
    rules: config.retention,
    budget: budget.budget,
    model,
    tokenCorrection: correction.correction,
  }
  const markupPercent = store.organisations.get(orgId)?.markup_percent ?? PLATFORM_MARKUP_PERCENT
  const frame: TurnFrame = {
    submission,
    request: packRequest,
    instructions,
    configVersions: config.versions,
    budget,
    baseConfigWarnings: [...config.warnings, ...budget.warnings],
    effort: coerceReasoningEffort(request.reasoning_effort, model),
    correction,
    markupPercent,
    tools,
  }
  const read = (packed: PackedTurn | null): ReadTurn => ({ frame, packed, newBodies, now })
  if (runningRuns.count >= cap) return { facts: { runningRuns, overflow: null, budget: null, unmetToolChoice: null }, read: read(null) }
  // Refused before anything is spent on packing.
  if (toolChoice !== null) return { facts: { runningRuns, overflow: null, budget: null, unmetToolChoice: toolChoice }, read: read(null) }

  const packing = deps.history.packOrOverflow(submission.chatId, packRequest)
  if (packing.kind === 'too-large') return { facts: { runningRuns, overflow: packing.overflow, budget: null, unmetToolChoice: null }, read: read(null) }
  const packed = packing.turn
  const balance = store.balance.balanceOf(orgId)
  return { facts: { runningRuns, overflow: null, budget: budgetFactsOf(frame, packed.estimatedTokens, balance), unmetToolChoice: null }, read: read(packed) }
}

/**
 * The write half of admission (the chat machine's invoked `writeTurn`), for a turn the machine's turn
 * rules passed: assembles it (src/actors/assemble-turn.ts, max_tokens by decideMaxTokens over the
 * facts the rules read) and writes it: tombstones for unanswered calls, the input parts, the run and
 * the idempotency key, in one transaction, committed before it resolves, so before any byte is
 * streamed. The running-run cap and the idempotency key are asked again there: another chat's turn
 * may have taken the last place or the key since. Rejects with the domain error that refuses it; a
 * refusal writes nothing. `channel` is the submission's event log (src/actors/run-channel.ts), the
 * run's from admission on.
 */
export async function writeTurn(
  deps: RunDeps,
  compactor: Compactor,
  read: ReadTurn,
  facts: TurnFacts,
  closing: CallClosing,
  channel: RunChannel,
): Promise<Admission> {
  const { store } = deps
  const { frame, packed, newBodies, now } = read
  const { submission } = frame
  const { request, model, orgId } = submission
  if (!packed || !facts.budget) throw new Error(`the turn of run ${submission.runId} was not packed: the machine's turn rules refuse it`)
  const userMetadata = request.user_metadata ?? {}
  const turn = assembleTurn(frame, packed, facts.budget, () => {
    throw new Error(`the turn of run ${submission.runId} cannot be paid for: the machine's cannotAffordTurn guard refuses it`)
  })
  const runId = submission.runId
  const cap = facts.runningRuns.cap
  let inputOrdinals: Admission['inputOrdinals'] = null
  await store.writes.write(() => {
    // In the transaction that inserts the run: another chat's turn may have taken the last place since.
    refuseOverRunningCap(deps, orgId, cap)
    // Checked again where it is written: another chat's turn may have taken the key since.
    if (request.idempotency_key) {
      const earlier = store.idempotencyKeys.runOf(orgId, request.idempotency_key, now)
      if (earlier) throw new IdempotencyKeyReusedError(earlier)
    }
    if (submission.newChat) {
      store.chats.create({ id: submission.chatId, orgId, namespace: submission.newChat.namespace, title: null, description: null, userMetadata: {} })
    }
    const written = store.parts.append(
      submission.chatId,
      // History the input carried is no run's output: it is written with no run (decision 055).
      newBodies.map((p): NewPart => ({ body: p.body, runId: 'seeded' in p && p.seeded ? null : runId, userMetadata, tokens: p.tokens, media: p.media })),
    )
    inputOrdinals = written.length === 0 ? null : { first: written[0]!.ordinal, last: written.at(-1)!.ordinal }
    insertRun(deps, submission.chatId, {
      id: runId,
      org_id: orgId,
      chat_id: submission.chatId,
      origin: 'customer',
      model_id: model.id,
      model_name: model.name,
      namespace: submission.namespace,
      api_key_id: submission.apiKeyId,
      retry_of: request.retry_of ?? null,
      created_at: now.toISOString(),
      manifest: {
        ...turn.manifest(withWrittenParts(packed.context, packed, written.map((row) => row.ordinal))),
        // The turn's input as the ledger holds it (closures, input, carried history): what the run was given new.
        input_ordinals: inputOrdinals,
      },
    })
    if (request.idempotency_key) store.idempotencyKeys.record(orgId, request.idempotency_key, runId, now)
  })

  return {
    runId,
    chatId: submission.chatId,
    orgId,
    apiKeyId: submission.apiKeyId,
    namespace: submission.namespace,
    model,
    // The submission's event log: the run's stream once the machine announces the admission.
    channel,
    closedToolCalls: closing.closures.map((c) => c.tool_use_id),
    configWarnings: turn.configWarnings,
    translationWarnings: turn.translationWarnings,
    prompt: turn.prompt,
    tools: frame.tools,
    maxTokens: turn.maxTokens,
    window: turn.window,
    reasoningEffort: frame.effort.value,
    vendorReasoning: turn.vendorReasoning,
    callSettings: turn.callSettings,
    estimatedInputTokens: turn.estimatedInputTokens,
    inputOrdinals,
    isRetry: Boolean(request.retry_of),
    userMetadata,
    markupPercent: frame.markupPercent,
    startedAtMs: Date.now(),
    createdAt: now.toISOString(),
    compaction:
      packed.needed.length > 0
        ? { blocks: packed.needed, inProgressElsewhere: compactor.inProgress(submission.chatId, packed.needed), elsewhere: [] }
        : null,
    compactionReport: compactionReport(packed.context, []),
    // What compaction needs to pack the turn again over its new summaries: the turn's parts are in
    // the ledger by then, as parts of this run.
    repack: { ...frame, request: { ...frame.request, newParts: [], currentRuns: [...frame.request.currentRuns, runId] } },
    refits: 0,
  }
}

/** 429 when the organisation already has `cap` running customer runs (compaction runs do not count). */
function refuseOverRunningCap(deps: RunDeps, orgId: string, cap: number): void {
  if (deps.store.runs.runningCustomerRunsOfOrg(orgId, cap) >= cap) throw new RunningRunsLimitError(cap)
}

/**
 * The chat machine refuses a turn while the ledger holds a running run (docs/guide/runs.md); migration
 * 0009's index refuses it here too, should anything get past: the same 409, naming that run.
 */
function insertRun(deps: RunDeps, chatId: string, run: Parameters<typeof openRun>[1]): void {
  try {
    openRun(deps, run)
  } catch (error) {
    const running = (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' ? deps.store.runs.runningCustomerRun(chatId) : null
    if (running) throw new RunInProgressError(running.id)
    throw error
  }
}

/** done.compaction (docs/guide/context.md): null when no summary was packed. */
export function compactionReport(context: ContextManifest, elsewhere: readonly string[]): CompactionReport | null {
  if (context.summaries.length === 0) return null
  const fromElsewhere = new Set(elsewhere)
  const isElsewhere = (s: ContextManifest['summaries'][number]) => fromElsewhere.has(`${s.first_ordinal}-${s.last_ordinal}`)
  return {
    blocks_generated: context.summaries.filter((s) => !s.reused).length,
    blocks_reused: context.summaries.filter((s) => s.reused && !isElsewhere(s)).length,
    in_progress_elsewhere: context.summaries.filter(isElsewhere).length,
  }
}

// Resolved configurations are shared between turns until configuration changes; so are their tools.
const providerTools = new WeakMap<ResolvedConfiguration, LanguageModelV4FunctionTool[]>()
function providerToolsOf(config: ResolvedConfiguration): LanguageModelV4FunctionTool[] {
  let tools = providerTools.get(config)
  if (!tools) {
    tools = config.tools.map((t) => ({
      type: 'function',
      name: t.name,
      inputSchema: t.input_schema as LanguageModelV4FunctionTool['inputSchema'],
      ...(t.description ? { description: t.description } : {}),
      ...(t.strict === true || t.strict === false ? { strict: t.strict } : {}),
    }))
    providerTools.set(config, tools)
  }
  return tools
}

/** The manifest's context with the parts this turn wrote, once their ordinals are known. */
function withWrittenParts(context: ContextManifest, packed: PackedTurn, ordinals: number[]): ContextManifest {
  const segments = context.segments.map((s) => ({ ...s }))
  // The sent new parts end the packed context, in order.
  const sentNew = packed.parts.slice(packed.parts.length - packed.newPartsSent.filter(Boolean).length)
  let next = 0
  ordinals.forEach((ordinal, i) => {
    if (packed.newPartsSent[i]) addSegment(segments, ordinal, ordinal, 1, 'verbatim', sentNew[next++]!.tokens)
  })
  return { ...context, segments }
}
