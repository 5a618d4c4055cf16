import type { CatalogueEntry, MediaPolicy } from '../catalogue/catalogue-entry.ts'
import type { ConfigWarning, ContextBudget, HistoryMode, RetentionRules } from '../config/config-types.ts'
import { ContextTooLargeError } from '../errors.ts'
import type { PartBody } from '../parts.ts'
import { saturatingAdd } from '../tokens/estimate-tokens.ts'
import type { TranslationWarning } from '../turns/coerce-reasoning-effort.ts'
import { floorTimes, historyBudget, inputBudget } from './budget.ts'
import { addSegment, type ContextManifest, type Segment } from './context-manifest.ts'
import type { MediaRef, PackedPart } from './context-types.ts'
import type { HistoryEntry, PackingHistory, Rendering } from './packing-history.ts'
import { choiceKey, renderTreated, type AttachmentChoice, type PartChoices } from './render-treated.ts'
import { mediaRetainFor, thresholdOrAll, thresholdOrNone } from './retention-choices.ts'

export type NewPart = { body: PartBody; media: readonly MediaRef[] }

export type PackInput = {
  history: PackingHistory
  /** The parts this submission writes (tombstones, then its input), not yet in the ledger. */
  newParts: readonly NewPart[]
  /** Runs whose parts are part of the current exchange: a retried run, the run whose calls are closed. */
  currentRuns: readonly string[]
  instructionsTokens: number
  toolsTokens: number
  rules: RetentionRules
  budget: ContextBudget
  model: Pick<CatalogueEntry, 'context_window' | 'media'>
}

export type PackedContext = {
  /** Anchors, kept history, the current exchange, in ledger order; new parts have ordinal -1. */
  parts: PackedPart[]
  /** Which of `newParts` are sent (a result whose call is not in the context is not). */
  newPartsSent: boolean[]
  /** The manifest's context; segments cover the existing ordinals, the new ones are added once written. */
  context: ContextManifest
  estimatedTokens: number
  /** The oldest history entry packing looked at: older bodies are not needed next turn. */
  oldestVisited: number
}

export type PackResult =
  | { kind: 'packed'; value: PackedContext; warnings: { config: ConfigWarning[]; translation: TranslationWarning[] } }
  /** The walk reached entries whose bodies the keeper let go: read them (entries before `before`) and pack again. */
  | { kind: 'needs-bodies'; before: number }

type Item = { index: number; entry: HistoryEntry | null; body: PartBody | null; media: readonly MediaRef[]; ordinal: number; choices: PartChoices; rendering: Rendering }

const carrierPolicy = (body: PartBody, media: CatalogueEntry['media']): MediaPolicy | null =>
  body.type === 'prompt' ? media.user : body.type === 'tool_result' ? media.tool_result : null

function modelRefusal(policy: MediaPolicy | null, m: MediaRef): string | null {
  if (policy === null || !policy.mime_types.includes(m.mime)) return `the model does not take ${m.mime} here`
  if (m.byteLen > policy.max_bytes_per_attachment) return 'it is larger than the model takes'
  return null
}

/**
 * Packs a turn's context (decisions §5): the fixed parts (instructions, tools, anchors, the current
 * exchange) whole, then as much of the newest history as fits the history budget under the
 * retention rules, the oldest dropped. Work is proportional to the parts sent, not the ledger: recency
 * comes from running sums, and renderings are kept on the history entries between turns.
 */
export function packContext(input: PackInput): PackResult {
  const { history, rules, budget, model } = input
  const entries = history.entries
  const n = history.length

  // The current exchange in the history: from the first part of its runs to the end, whole units.
  let currentStart = n
  for (const runId of input.currentRuns) {
    const first = history.firstIndexOfRun(runId)
    if (first !== -1) currentStart = Math.min(currentStart, first)
  }
  while (currentStart > 0 && currentStart < n && !history.canStart[currentStart]) currentStart--
  // Anchors: the first anchor_parts packable parts, extended to a whole unit.
  let anchorEnd = Math.min(rules.anchor_parts ?? 0, currentStart)
  while (anchorEnd < currentStart && !history.canStart[anchorEnd]) anchorEnd++

  const wholeChoices = (body: PartBody, media: readonly MediaRef[]): PartChoices => {
    const policy = carrierPolicy(body, model.media)
    const refusals = media.map((m) => modelRefusal(policy, m))
    return { cut: false, attachments: refusals.map((r) => (r === null ? 'send' : 'model')), modelRefusals: refusals, limit: null }
  }
  const render = (entry: HistoryEntry, choices: PartChoices): Rendering | null => {
    if (entry.renders === null || entry.renders.rules !== rules || entry.renders.media !== model.media) {
      entry.renders = { rules, media: model.media, byKey: new Map() }
    }
    const key = choiceKey(choices)
    const kept = entry.renders.byKey.get(key)
    if (kept) return kept
    if (entry.body === null) return null
    const made = renderTreated(entry.body, entry.media, choices, rules)
    entry.renders.byKey.set(key, made)
    return made
  }
  const fixedItem = (i: number): Item | number => {
    const entry = entries[i]!
    const choices = wholeChoices(entry.body ?? stubBody(entry), entry.media)
    const rendering = render(entry, choices)
    return rendering === null ? i : { index: i, entry, body: entry.body, media: entry.media, ordinal: entry.ordinal, choices, rendering }
  }

  const anchors: Item[] = []
  for (let i = 0; i < anchorEnd; i++) {
    const item = fixedItem(i)
    if (typeof item === 'number') return { kind: 'needs-bodies', before: anchorEnd }
    anchors.push(item)
  }
  const current: Item[] = []
  for (let i = currentStart; i < n; i++) {
    const item = fixedItem(i)
    if (typeof item === 'number') return { kind: 'needs-bodies', before: n }
    current.push(item)
  }
  const newPartsSent = input.newParts.map((p) => p.body.type !== 'tool_result' || history.hasCall(p.body.tool_use_id))
  input.newParts.forEach((part, i) => {
    if (!newPartsSent[i]) return
    const choices = wholeChoices(part.body, part.media)
    current.push({ index: -1, entry: null, body: part.body, media: part.media, ordinal: -1, choices, rendering: renderTreated(part.body, part.media, choices, rules) })
  })

  const sum = (items: Item[]) => saturatingAdd(...items.map((it) => it.rendering.tokens))
  const tokens = { instructions: input.instructionsTokens, tools: input.toolsTokens, anchors: sum(anchors), current: sum(current) }
  const window = inputBudget(model.context_window, budget)
  const fixed = saturatingAdd(tokens.instructions, tokens.tools, tokens.anchors, tokens.current)
  let allowance = historyBudget(window, fixed, budget)
  if (window - fixed < 0) throw contextTooLarge(window, tokens, fixed)

  // Recency (decisions §5.2): the estimates of the history parts newer than a part, against the budget.
  const newestSum = history.prefix[currentStart]!
  const limits = new Map<number, number>()
  const limitOf = (t: number) => {
    if (t === Number.POSITIVE_INFINITY || t === Number.NEGATIVE_INFINITY) return t
    let limit = limits.get(t)
    if (limit === undefined) limits.set(t, (limit = floorTimes(Math.max(0, allowance), t)))
    return limit
  }
  const verbatimLimit = limitOf(thresholdOrNone(rules.verbatim_within))
  const reasoningLimit = limitOf(thresholdOrAll(rules.reasoning))

  const historyChoices = (entry: HistoryEntry, newer: number): PartChoices | 'omitted' => {
    if (entry.kind === 'reasoning') return newer <= reasoningLimit ? { cut: false, attachments: [], modelRefusals: [], limit: null } : 'omitted'
    const policy = entry.media.length > 0 ? carrierPolicy(entry.body ?? stubBody(entry), model.media) : null
    const refusals = entry.media.map((m) => modelRefusal(policy, m))
    const attachments = entry.media.map((m, k): AttachmentChoice =>
      newer > limitOf(mediaRetainFor(m.mime, rules.media)) ? 'retention' : refusals[k] === null ? 'send' : 'model',
    )
    return { cut: !(newer <= verbatimLimit), attachments, modelRefusals: refusals, limit: null }
  }

  // Newest first, a unit at a time: a unit that does not fit ends the walk, and it and all older are dropped.
  const kept: Item[] = []
  let keptTokens = 0
  let unit: Item[] = []
  let unitTokens = 0
  let keptFrom = currentStart
  let oldestVisited = currentStart
  const omitted = new Set<number>()
  const unitOmitted: number[] = []
  for (let i = currentStart - 1; i >= anchorEnd; i--) {
    const entry = entries[i]!
    oldestVisited = i
    const choices = historyChoices(entry, newestSum - history.prefix[i + 1]!)
    if (choices === 'omitted') unitOmitted.push(i)
    else {
      const rendering = render(entry, choices)
      if (rendering === null) return { kind: 'needs-bodies', before: i + 1 }
      unit.push({ index: i, entry, body: entry.body, media: entry.media, ordinal: entry.ordinal, choices, rendering })
      unitTokens += rendering.tokens
    }
    if (!history.canStart[i]) continue
    if (keptTokens + unitTokens > allowance) break
    keptTokens += unitTokens
    // Newest first, like the walk; reversed once it ends.
    for (const item of unit) kept.push(item)
    for (const o of unitOmitted) omitted.add(o)
    unit = []
    unitOmitted.length = 0
    unitTokens = 0
    keptFrom = i
  }
  kept.reverse()

  const translation = applyAttachmentLimits([...anchors, ...kept, ...current], model.media, rules, render)
  // Markers for attachments over the limit can cost more than the files they replace (a tiny text file),
  // in the fixed parts too: the history gets what they leave, and they may no longer fit at all.
  const fixedSent = saturatingAdd(tokens.instructions, tokens.tools, sum(anchors), sum(current))
  if (window - fixedSent < 0) throw contextTooLarge(window, { ...tokens, anchors: sum(anchors), current: sum(current) }, fixedSent)
  allowance = Math.min(allowance, historyBudget(window, fixedSent, budget))
  while (kept.length > 0 && (keptTokens = sum(kept)) > allowance) {
    let cutAt = kept[0]!.index + 1
    while (cutAt < currentStart && !history.canStart[cutAt]) cutAt++
    while (kept.length > 0 && kept[0]!.index < cutAt) kept.shift()
    for (const o of [...omitted]) if (o < cutAt) omitted.delete(o)
    keptFrom = cutAt
  }
  // The loop leaves keptTokens stale once it has emptied `kept`; parts it dropped send nothing to warn about.
  keptTokens = sum(kept)
  const sent = new Set([...anchors, ...kept, ...current].map((it) => it.ordinal))
  translation.splice(0, translation.length, ...translation.filter((w) => sent.has(w.details?.ordinal as number)))
  tokens.anchors = sum(anchors)
  tokens.current = sum(current)
  for (const item of [...anchors, ...current]) if (item.choices.attachments.includes('model')) translation.push(...modelWarnings(item))
  for (const item of kept) if (item.choices.attachments.includes('model')) translation.push(...modelWarnings(item))

  // The manifest: every packable ordinal once, in ledger order.
  const segments: Segment[] = []
  for (const item of anchors) addSegment(segments, item.ordinal, item.ordinal, 1, 'verbatim', item.rendering.tokens)
  const dropped = keptFrom > anchorEnd ? { dropped: keptFrom - anchorEnd, start_ordinal: entries[anchorEnd]!.ordinal, end_ordinal: entries[keptFrom - 1]!.ordinal } : null
  if (dropped) addSegment(segments, dropped.start_ordinal, dropped.end_ordinal, dropped.dropped, 'dropped', 0)
  const packed: PackedPart[] = anchors.map((it) => packedOf(it, 'verbatim'))
  let next = 0
  for (let i = keptFrom; i < currentStart; i++) {
    const entry = entries[i]!
    if (omitted.has(i)) {
      addSegment(segments, entry.ordinal, entry.ordinal, 1, 'omitted', 0)
      continue
    }
    const item = kept[next++]!
    const treatment = item.rendering.truncated ? 'truncated' : 'verbatim'
    addSegment(segments, entry.ordinal, entry.ordinal, 1, treatment, item.rendering.tokens)
    packed.push(packedOf(item, treatment))
  }
  for (const item of current) {
    if (item.entry) addSegment(segments, item.ordinal, item.ordinal, 1, 'verbatim', item.rendering.tokens)
    packed.push(packedOf(item, 'verbatim'))
  }

  const total = saturatingAdd(tokens.instructions, tokens.tools, tokens.anchors, keptTokens, tokens.current)
  const config: ConfigWarning[] = dropped ? [historyDropped(dropped, budget.history_mode ?? 'summarize')] : []
  return {
    kind: 'packed',
    value: {
      parts: packed,
      newPartsSent,
      context: {
        input_budget: window,
        history_budget: Math.max(0, allowance),
        tokens: {
          instructions: tokens.instructions,
          tools: tokens.tools,
          anchors: tokens.anchors,
          history: keptTokens,
          summaries: 0,
          current: tokens.current,
          total,
        },
        segments,
        summaries: [],
        dropped,
      },
      estimatedTokens: total,
      oldestVisited,
    },
    warnings: { config, translation },
  }
}

const packedOf = (item: Item, treatment: PackedPart['treatment']): PackedPart => ({
  ordinal: item.ordinal,
  kind: item.rendering.content?.type ?? item.entry!.kind,
  treatment,
  content: item.rendering.content,
  tokens: item.rendering.tokens,
})

/** A body standing in for an entry whose body was let go, where only its type matters (its carrier). */
function stubBody(entry: HistoryEntry): PartBody {
  return entry.kind === 'tool_result'
    ? { type: 'tool_result', text: '', is_error: false, tool_name: '', tool_use_id: entry.toolUseId ?? '', trust: 'trusted' }
    : { type: 'prompt', text: '' }
}

function modelWarnings(item: Item): TranslationWarning[] {
  return item.media.flatMap((m, i) =>
    item.choices.attachments[i] === 'model'
      ? [{ code: 'attachment_replaced_by_marker', message: item.choices.modelRefusals[i] ?? 'the model does not take it', details: { ordinal: item.ordinal, mime: m.mime } }]
      : [],
  )
}

/**
 * Spec §2.7: `max_attachments_per_request` counts a carrier's attachments across the whole context.
 * The oldest over it become markers, each with a translation warning.
 */
function applyAttachmentLimits(
  items: Item[],
  media: CatalogueEntry['media'],
  rules: RetentionRules,
  render: (entry: HistoryEntry, choices: PartChoices) => Rendering | null,
): TranslationWarning[] {
  const warnings: TranslationWarning[] = []
  for (const [carrier, policy] of [['prompt', media.user], ['tool_result', media.tool_result]] as const) {
    const limit = policy.max_attachments_per_request
    if (limit === null || limit === undefined) continue
    const carrying = items.filter((it) => it.rendering.content?.type === carrier)
    let over = carrying.reduce((n, it) => n + it.choices.attachments.filter((a) => a === 'send').length, 0) - limit
    for (const item of carrying) {
      if (over <= 0) break
      const attachments = item.choices.attachments.map((a): AttachmentChoice => {
        if (a !== 'send' || over <= 0) return a
        over--
        return 'limit'
      })
      item.choices = { ...item.choices, attachments, limit }
      const again = item.entry ? render(item.entry, item.choices) : null
      item.rendering = again ?? renderTreated(item.body!, item.media, item.choices, rules)
      item.media.forEach((m, i) => {
        if (attachments[i] === 'limit') {
          warnings.push({
            code: 'attachment_replaced_by_marker',
            message: `the model takes at most ${limit} attachments per request here; older ones are sent as markers`,
            details: { ordinal: item.ordinal, mime: m.mime, limit },
          })
        }
      })
    }
  }
  return warnings
}

function historyDropped(dropped: NonNullable<ContextManifest['dropped']>, mode: HistoryMode): ConfigWarning {
  const warning: ConfigWarning = { code: 'history_dropped', ...dropped }
  if (mode === 'drop_oldest') return warning
  // Until compaction exists, summarize drops the oldest history too, and says so.
  return { ...warning, history_mode: 'summarize', message: 'summaries are not made yet: the oldest history was dropped as under drop_oldest' }
}

function contextTooLarge(window: number, tokens: { instructions: number; tools: number; anchors: number; current: number }, fixed: number) {
  return new ContextTooLargeError(
    `the fixed parts need ${fixed} tokens but the model's input budget is ${window}: instructions ${tokens.instructions}, ` +
      `tools ${tokens.tools}, anchor parts ${tokens.anchors}, the current exchange ${tokens.current}`,
    { input_budget: window, estimated_tokens: fixed, fixed_tokens: { ...tokens } },
    'shorten the input or the instructions, publish fewer anchor_parts or a budget with less headroom, or use a model with a larger context window',
  )
}
