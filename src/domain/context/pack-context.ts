import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'
import type { ConfigWarning, ContextBudget, HistoryMode, RetentionRules } from '../config/config-types.ts'
import { contextTooLargeError, fixedPartsFit, type ContextOverflow } from './context-overflow.ts'
import type { PartBody, PartKind } from '../parts.ts'
import { saturatingAdd } from '../tokens/estimate-tokens.ts'
import type { TranslationWarning } from '../turns/coerce-reasoning-effort.ts'
import { floorTimes, historyBudget } from './budget.ts'
import { estimateBudget, vendorInputBudget, type ModelLimits } from './model-limits.ts'
import { addSegment, type ContextManifest, type LeftOutAttachment, type Segment } from './context-manifest.ts'
import type { MediaRef, PackedPart } from './context-types.ts'
import type { EntryCache, HistoryEntry, PackingHistory, Rendering } from './packing-history.ts'
import { applyAttachmentLimits, modelRefusal, modelWarnings, overAttachmentLimit, policyOfKind, type PackItem } from './attachment-limits.ts'
import { CHOICE_BASE, CHOICE_DIGIT, choicesOfCode, renderTreated, wholeCode } from './render-treated.ts'
import { imageRuleOf } from './image-tokens.ts'
import { inlineFileBytes, renderedBytes, REQUEST_ENVELOPE_BYTES } from './request-bytes.ts'
import { leaveOutOldest, leavesOutForBytes, leftOutOf } from './leave-out-for-bytes.ts'
import { mediaRetainFor, thresholdOrAll, thresholdOrNone } from './retention-choices.ts'
import { BlockIndex, type Block, type BlockCut } from './cut-blocks.ts'
import { planSummaries, type SummaryPlan } from './plan-summaries.ts'
import { packedSummary, type BlockSummary } from './render-summary.ts'

export type NewPart = { body: PartBody; media: readonly MediaRef[] }

export type PackInput = {
  history: PackingHistory
  /** The parts this submission writes (tombstones, then its input), not yet in the ledger. */
  newParts: readonly NewPart[]
  /** Runs whose parts are part of the current exchange: a retried run, the run whose calls are closed. */
  currentRuns: readonly string[]
  instructionsTokens: number
  toolsTokens: number
  /** What the vendor request carries besides the parts, in bytes: the instructions and the tool definitions as JSON. 0 when not given. */
  instructionsAndToolsBytes?: number
  rules: RetentionRules
  budget: ContextBudget
  /** `provider` picks the image token rule (src/domain/context/image-tokens.ts); `max_request_bytes` bounds the request (decision 045). */
  model: Pick<CatalogueEntry, 'media' | 'provider' | 'max_request_bytes'> & ModelLimits
  /**
   * The model's correction of our estimate to its vendor's count (src/domain/context/token-correction.ts):
   * packing measures estimates against the input budget over it. 1 when not given.
   */
  tokenCorrection?: number
  /** What `summarize` needs (docs/guide/context.md); without it the oldest history is dropped. */
  compaction?: CompactionInput
  /** Eager planning (docs/guide/context.md `at_fill`): the history budget taken as this share of itself. */
  fillFraction?: number
}

export type CompactionInput = {
  /** The chat's sealed blocks, extended here up to the current exchange, from the end of the anchors. */
  blocks: BlockIndex
  /** How blocks are cut (src/domain/context/cut-blocks.ts), but where they begin: packing knows the anchors. */
  cut: Omit<BlockCut, 'from'>
  /** The stored summary of a range (a block's, or a merged one). */
  summaryOf: (block: Block) => BlockSummary | null
  /** The chat's latest merged summary (decisions §5.3). */
  merged: BlockSummary | null
  /** The most a merged summary costs as sent, and the most a merge reads (src/domain/context/compaction-sizes.ts). */
  mergedBound: number
  mergeInputTokens: number
  /** Ranges (by blockKey) that will not be summarised this turn: their compaction failed. */
  unavailable: ReadonlySet<string>
  /** Blocks summarised for this turn (the others it sends were reused). */
  madeNow: ReadonlySet<string>
  /** The verbatim start of the previous turn, kept while it fits (src/domain/context/plan-summaries.ts). */
  previousStart: number | null
  /** Where the previous turn's first summary began: older summaries stay dropped. */
  previousFirstSummary: number | null
  /** Tokens set aside for a summary that is not made yet. */
  estimate: number
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
  /**
   * Summaries this context needs and that do not exist, sent as placeholders until made: blocks, and
   * merges (`of`: the ranges merged, oldest first), each after the blocks it merges.
   */
  needed: NeededSummary[]
  /** The first history entry sent verbatim. */
  verbatimStart: number
  /** Where the first summary sent begins (an entry index); null when none is. */
  firstSummary: number | null
  /** Counts of leading parts that stay the same from turn to turn: where cache breakpoints go. */
  stablePrefixEnds: number[]
}

export type NeededSummary = Block & { of?: Block[] }

export type PackResult =
  | { kind: 'packed'; value: PackedContext; warnings: { config: ConfigWarning[]; translation: TranslationWarning[] } }
  /** The walk reached entries whose bodies the keeper let go: read them (entries before `before`) and pack again. */
  | { kind: 'needs-bodies'; before: number }

/** What packContextOrOverflow answers besides PackResult: the fixed parts do not fit the input budget. */
export type PackOverflow = { kind: 'too-large'; overflow: ContextOverflow }


const sumOf = (items: readonly PackItem[]) => {
  let total = 0
  for (const item of items) total += item.rendering.tokens
  return saturatingAdd(total)
}
const bytesOf = (items: readonly PackItem[]) => {
  let total = 0
  for (const item of items) total += item.rendering.bytes
  return total
}
/**
 * An unmade summary is a placeholder until compaction writes it: counted at this many bytes a token
 * of its estimate (prose runs about four UTF-8 bytes a token; the rest is room for escapes and CJK).
 */
const UNMADE_SUMMARY_BYTES_PER_TOKEN = 8

/**
 * Packs a turn's context (docs/guide/context.md): the fixed parts (instructions, tools, anchors, the current
 * exchange) whole, then as much of the newest history as fits the history budget under the
 * retention rules, the oldest dropped. Work is proportional to the parts sent, not the ledger:
 * recency comes from running sums, each entry keeps its renderings by choice code between turns,
 * and a turn renders only the parts whose choices changed (decision 012).
 */
export function packContext(input: PackInput): PackResult {
  const result = packContextOrOverflow(input)
  if (result.kind === 'too-large') throw contextTooLargeError(result.overflow)
  return result
}

/** packContext, answering a context too large as a value (the fixed parts' sizes) instead of a throw. */
export function packContextOrOverflow(input: PackInput): PackResult | PackOverflow {
  const { history, rules, budget, model } = input
  const entries = history.entries
  const n = history.length
  const images = imageRuleOf(model.provider)
  // The vendor's limit on a request's bytes (decision 045), less what the request sends besides the parts.
  const requestLimit = model.max_request_bytes - REQUEST_ENVELOPE_BYTES - (input.instructionsAndToolsBytes ?? 0)

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

  const cacheOf = (entry: HistoryEntry): EntryCache => {
    let cache = entry.renders
    if (cache === null || cache.rules !== rules || cache.media !== model.media || cache.images !== images) {
      const policy = entry.media.length > 0 ? policyOfKind(entry.kind, model.media) : null
      cache = entry.renders = {
        rules,
        media: model.media,
        images,
        retain: entry.media.map((m) => mediaRetainFor(m.mime, rules.media)),
        refusals: entry.media.map((m) => modelRefusal(policy, m)),
        byCode: new Map(),
      }
    }
    return cache
  }
  const limitOfKind = (kind: PartKind) => policyOfKind(kind, model.media)?.max_attachments_per_request ?? null
  /** The entry's rendering for `code`, kept or made; null when its body was let go. */
  const renderEntry = (entry: HistoryEntry, cache: EntryCache, code: number): Rendering | null => {
    const kept = cache.byCode.get(code)
    if (kept) return kept
    if (entry.body === null) return null
    let made = renderTreated(entry.body, entry.media, choicesOfCode(code, entry.media.length, cache.refusals, limitOfKind(entry.kind)), rules, images)
    // A cut that cut nothing is the part whole: one rendering, so what is made from it stays shared too.
    const wholeCodeOf = wholeCode(cache.refusals)
    if (!made.truncated && code !== wholeCodeOf) made = cache.byCode.get(wholeCodeOf) ?? made
    cache.byCode.set(code, made)
    return made
  }
  const fixedPackItem = (i: number): PackItem | null => {
    const entry = entries[i]!
    const cache = cacheOf(entry)
    const code = wholeCode(cache.refusals)
    const rendering = renderEntry(entry, cache, code)
    return rendering === null ? null : { index: i, entry, body: entry.body, media: entry.media, ordinal: entry.ordinal, code, refusals: cache.refusals, rendering }
  }

  const anchors: PackItem[] = []
  for (let i = 0; i < anchorEnd; i++) {
    const item = fixedPackItem(i)
    if (item === null) return { kind: 'needs-bodies', before: anchorEnd }
    anchors.push(item)
  }
  const current: PackItem[] = []
  for (let i = currentStart; i < n; i++) {
    const item = fixedPackItem(i)
    if (item === null) return { kind: 'needs-bodies', before: n }
    current.push(item)
  }
  const newPartsSent = input.newParts.map((p) => p.body.type !== 'tool_result' || history.hasCall(p.body.tool_use_id))
  input.newParts.forEach((part, i) => {
    if (!newPartsSent[i]) return
    const policy = policyOfKind(part.body.type, model.media)
    const refusals = part.media.map((m) => modelRefusal(policy, m))
    const code = wholeCode(refusals)
    const rendering = renderTreated(part.body, part.media, choicesOfCode(code, part.media.length, refusals, limitOfKind(part.body.type)), rules, images)
    current.push({ index: -1, entry: null, body: part.body, media: part.media, ordinal: -1, code, refusals, rendering })
  })
  /** An item's rendering for a new code: kept on its entry, or made for a new part. */
  const renderItem = (item: PackItem, code: number): Rendering =>
    (item.entry === null ? null : renderEntry(item.entry, cacheOf(item.entry), code)) ??
    renderTreated(item.body!, item.media, choicesOfCode(code, item.media.length, item.refusals, limitOfKind(item.body!.type)), rules, images)

  // Fixed parts past the request limit (rare: attachments of anchors or of the exchange a turn closes):
  // theirs are left out oldest first, all but this submission's own; those alone past it refuse the turn.
  const storedFixed = [...anchors, ...current.filter((item) => item.entry !== null)]
  let fixedBytes = bytesOf(anchors) + bytesOf(current)
  if (fixedBytes > requestLimit) fixedBytes = requestLimit + leaveOutOldest(storedFixed, fixedBytes - requestLimit, renderItem)

  const tokens = { instructions: input.instructionsTokens, tools: input.toolsTokens, anchors: sumOf(anchors), current: sumOf(current) }
  // The input budget in our estimate's units: the vendor's budget (docs/decisions/027-model-limits.md) over the correction.
  const window = estimateBudget(vendorInputBudget(model, budget), input.tokenCorrection ?? 1)
  const fixed = saturatingAdd(tokens.instructions, tokens.tools, tokens.anchors, tokens.current)
  let allowance = historyBudget(window, fixed, budget)
  if (fixedBytes > requestLimit) {
    const requestBytes = { limit: model.max_request_bytes, fixed: model.max_request_bytes - requestLimit + fixedBytes }
    return { kind: 'too-large', overflow: { inputBudget: window, fixedTokens: fixed, tokens, requestBytes } }
  }
  if (!fixedPartsFit({ inputBudget: window, fixedTokens: fixed })) return { kind: 'too-large', overflow: { inputBudget: window, fixedTokens: fixed, tokens } }
  if (input.fillFraction !== undefined) allowance = floorTimes(allowance, input.fillFraction)

  // Recency (docs/guide/context.md): the estimates of the history parts newer than a part, against the budget.
  const newestSum = history.prefix[currentStart]!
  const limitOf = (t: number) => (t === Number.POSITIVE_INFINITY || t === Number.NEGATIVE_INFINITY ? t : floorTimes(Math.max(0, allowance), t))
  const verbatimLimit = limitOf(thresholdOrNone(rules.verbatim_within))
  const reasoningLimit = limitOf(thresholdOrAll(rules.reasoning))

  // Newest first, a unit at a time: a unit that does not fit ends the walk, and it and all older are
  // dropped. Parts go straight into parallel lists (newest first); a unit that does not fit is cut off
  // them again. No object is made per part: this loop is what a turn pays for its window.
  const keptIndex: number[] = []
  const keptCode: number[] = []
  const keptRendering: Rendering[] = []
  const omittedIndex: number[] = []
  let committed = 0
  let committedOmitted = 0
  let keptTokens = 0
  let unitTokens = 0
  // Bytes as tokens are: what the kept history weighs, against what the fixed parts leave of the request limit.
  const historyBytes = requestLimit - fixedBytes
  let keptBytes = 0
  let unitBytes = 0
  let keptFrom = currentStart
  let oldestVisited = currentStart
  const prefix = history.prefix
  const canStart = history.canStart
  const mediaLimits = new Map<number, number>()
  const mediaLimitOf = (t: number) => {
    let limit = mediaLimits.get(t)
    if (limit === undefined) mediaLimits.set(t, (limit = limitOf(t)))
    return limit
  }
  for (let i = currentStart - 1; i >= anchorEnd; i--) {
    const entry = entries[i]!
    oldestVisited = i
    const newer = newestSum - prefix[i + 1]!
    if (entry.kind === 'reasoning' && newer > reasoningLimit) omittedIndex.push(i)
    else {
      const cache = cacheOf(entry)
      // render-treated.ts `choiceCode`, written out: this loop runs for every part sent.
      let code = entry.kind !== 'reasoning' && newer > verbatimLimit ? 1 : 0
      const attachments = entry.media.length
      if (attachments > 0) {
        // Newest attachment first, so that what the request limit leaves out is the oldest.
        let weight = 2 * CHOICE_BASE ** (attachments - 1)
        let files = 0
        for (let k = attachments - 1; k >= 0; k--) {
          let digit: number = newer > mediaLimitOf(cache.retain[k]!) ? CHOICE_DIGIT.retention : cache.refusals[k] === null ? CHOICE_DIGIT.send : CHOICE_DIGIT.model
          if (digit === CHOICE_DIGIT.send) {
            const inline = inlineFileBytes(entry.media[k]!.byteLen)
            if (keptBytes + unitBytes + files + inline > historyBytes) digit = CHOICE_DIGIT.bytes
            else files += inline
          }
          code += weight * digit
          weight /= CHOICE_BASE
        }
      }
      const rendering = renderEntry(entry, cache, code)
      if (rendering === null) return { kind: 'needs-bodies', before: i + 1 }
      keptIndex.push(i)
      keptCode.push(code)
      keptRendering.push(rendering)
      unitTokens += rendering.tokens
      unitBytes += rendering.bytes
    }
    if (!canStart[i]) continue
    if (keptTokens + unitTokens > allowance || keptBytes + unitBytes > historyBytes) break
    keptTokens += unitTokens
    keptBytes += unitBytes
    unitTokens = 0
    unitBytes = 0
    committed = keptIndex.length
    committedOmitted = omittedIndex.length
    keptFrom = i
  }
  keptIndex.length = keptCode.length = keptRendering.length = committed
  omittedIndex.length = committedOmitted
  keptIndex.reverse()
  keptCode.reverse()
  keptRendering.reverse()
  omittedIndex.reverse()

  const translation: TranslationWarning[] = []
  const keptPackItem = (k: number): PackItem => {
    const entry = entries[keptIndex[k]!]!
    return { index: keptIndex[k]!, entry, body: entry.body, media: entry.media, ordinal: entry.ordinal, code: keptCode[k]!, refusals: entry.renders!.refusals, rendering: keptRendering[k]! }
  }
  if (overAttachmentLimit([anchors, current], keptRendering, model.media)) {
    // Rare (a model with a per-request limit and a chat of many attachments): worked on whole items.
    let kept = keptIndex.map((_, k) => keptPackItem(k))
    translation.push(...applyAttachmentLimits([...anchors, ...kept, ...current], model.media, rules, (item) => {
      if (item.entry === null) return null
      return renderEntry(item.entry, cacheOf(item.entry), item.code)
    }, limitOfKind, images))
    // Markers for attachments over the limit can cost more than the files they replace (a tiny text file),
    // in the fixed parts too: the history gets what they leave, and they may no longer fit at all.
    const fixedSent = saturatingAdd(tokens.instructions, tokens.tools, sumOf(anchors), sumOf(current))
    if (!fixedPartsFit({ inputBudget: window, fixedTokens: fixedSent })) {
      return { kind: 'too-large', overflow: { inputBudget: window, fixedTokens: fixedSent, tokens: { ...tokens, anchors: sumOf(anchors), current: sumOf(current) } } }
    }
    allowance = Math.min(allowance, historyBudget(window, fixedSent, budget))
    while (kept.length > 0 && sumOf(kept) > allowance) {
      let cutAt = kept[0]!.index + 1
      while (cutAt < currentStart && !canStart[cutAt]) cutAt++
      kept = kept.filter((item) => item.index >= cutAt)
      while (omittedIndex.length > 0 && omittedIndex[0]! < cutAt) omittedIndex.shift()
      keptFrom = cutAt
    }
    keptIndex.length = keptCode.length = keptRendering.length = 0
    for (const item of kept) {
      keptIndex.push(item.index)
      keptCode.push(item.code)
      keptRendering.push(item.rendering)
    }
    keptTokens = sumOf(kept)
    // Parts the loop dropped send nothing to warn about.
    const sent = new Set([...anchors, ...kept, ...current].map((it) => it.ordinal))
    translation.splice(0, translation.length, ...translation.filter((w) => sent.has(w.details?.ordinal as number)))
    tokens.anchors = sumOf(anchors)
    tokens.current = sumOf(current)
  }
  // summarize (docs/guide/context.md): the oldest history as summaries of sealed blocks, verbatim from a block boundary.
  let plan: SummaryPlan | null = null
  const compaction = input.compaction
  if (compaction && (budget.history_mode ?? 'summarize') === 'summarize' && keptFrom > anchorEnd) {
    const suffix = new Array<number>(keptRendering.length + 1)
    suffix[keptRendering.length] = 0
    for (let k = keptRendering.length - 1; k >= 0; k--) suffix[k] = suffix[k + 1]! + keptRendering[k]!.tokens
    const firstKeptAt = (start: number) => {
      let lo = 0
      let hi = keptIndex.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (keptIndex[mid]! < start) lo = mid + 1
        else hi = mid
      }
      return lo
    }
    plan = planSummaries({
      blocks: compaction.blocks.extend(history, currentStart, { ...compaction.cut, from: anchorEnd }),
      anchorEnd,
      currentStart,
      keptFrom,
      verbatimFrom: (start) => suffix[firstKeptAt(start)]!,
      allowance,
      summaryOf: compaction.summaryOf,
      merged: compaction.merged,
      unavailable: compaction.unavailable,
      estimate: compaction.estimate,
      mergedBound: compaction.mergedBound,
      mergeInputTokens: compaction.mergeInputTokens,
      previousStart: compaction.previousStart,
      previousFirstSummary: compaction.previousFirstSummary,
    })
    const cut = firstKeptAt(plan.verbatimStart)
    keptIndex.splice(0, cut)
    keptCode.splice(0, cut)
    keptRendering.splice(0, cut)
    while (omittedIndex.length > 0 && omittedIndex[0]! < plan.verbatimStart) omittedIndex.shift()
    keptTokens = suffix[cut]!
    keptFrom = plan.verbatimStart
  }

  // The request limit once more, summaries in: they may weigh more than the history they replace, and
  // markers for the per-request count may outweigh tiny files. Rare: the history's oldest go first.
  let summaryBytes = 0
  for (const choice of plan?.choices ?? []) {
    switch (choice.kind) {
      case 'summary':
        summaryBytes += renderedBytes(packedSummary(choice.summary).content!)
        break
      case 'merge':
        summaryBytes += choice.tokens * UNMADE_SUMMARY_BYTES_PER_TOKEN
        break
      case 'needed':
        summaryBytes += compaction!.estimate * UNMADE_SUMMARY_BYTES_PER_TOKEN
        break
      case 'dropped':
        break
      default: {
        const unknown: never = choice
        throw new Error(`unknown summary choice ${JSON.stringify(unknown)}`)
      }
    }
  }
  keptBytes = 0
  for (const rendering of keptRendering) keptBytes += rendering.bytes
  const over = bytesOf(anchors) + keptBytes + bytesOf(current) + summaryBytes - requestLimit
  if (over > 0) {
    const kept = keptIndex.map((_, k) => keptPackItem(k))
    const stillOver = leaveOutOldest([...anchors, ...kept, ...current.filter((item) => item.entry !== null)], over, renderItem)
    kept.forEach((item, k) => {
      keptCode[k] = item.code
      keptRendering[k] = item.rendering
    })
    keptTokens = sumOf(kept)
    tokens.anchors = sumOf(anchors)
    tokens.current = sumOf(current)
    if (stillOver > 0) {
      const fixedSent = saturatingAdd(tokens.instructions, tokens.tools, tokens.anchors, tokens.current)
      const requestBytes = { limit: model.max_request_bytes, fixed: model.max_request_bytes + stillOver }
      return { kind: 'too-large', overflow: { inputBudget: window, fixedTokens: fixedSent, tokens, requestBytes } }
    }
  }

  // What was left out for the request limit: the manifest's list and a warning each, oldest first.
  const leftOut: LeftOutAttachment[] = []
  const noteLeftOut = (ordinal: number, media: readonly MediaRef[], code: number) => {
    if (media.length === 0 || !leavesOutForBytes(code, media.length)) return
    const { entries: left, warnings } = leftOutOf(ordinal, media, code, model.max_request_bytes)
    leftOut.push(...left)
    translation.push(...warnings)
  }
  for (const item of anchors) noteLeftOut(item.ordinal, item.media, item.code)
  for (let k = 0; k < keptIndex.length; k++) noteLeftOut(entries[keptIndex[k]!]!.ordinal, entries[keptIndex[k]!]!.media, keptCode[k]!)
  for (const item of current) noteLeftOut(item.ordinal, item.media, item.code)

  for (const item of anchors) if (item.rendering.refused > 0) translation.push(...modelWarnings(item))
  for (let k = 0; k < keptRendering.length; k++) if (keptRendering[k]!.refused > 0) translation.push(...modelWarnings(keptPackItem(k)))
  for (const item of current) if (item.rendering.refused > 0) translation.push(...modelWarnings(item))

  // The manifest: every packable ordinal once, in ledger order.
  const segments: Segment[] = []
  for (const item of anchors) addSegment(segments, item.ordinal, item.ordinal, 1, 'verbatim', item.rendering.tokens)
  const packed: PackedPart[] = anchors.map(packedWhole)
  const summaries: ContextManifest['summaries'] = []
  const needed: NeededSummary[] = []
  const droppedRanges: { start: number; end: number }[] = []
  const reasons = new Set<DropReason>()
  let summaryTokens = 0
  if (plan) {
    if (plan.skipped) {
      reasons.add('earlier')
      const { start, end } = plan.skipped
      droppedRanges.push(plan.skipped)
      addSegment(segments, entries[start]!.ordinal, entries[end - 1]!.ordinal, end - start, 'dropped', 0)
    }
    for (const choice of plan.choices) {
      const { start, end, firstOrdinal, lastOrdinal } = choice.block
      const count = end - start
      if (choice.kind === 'dropped') {
        reasons.add(compaction!.unavailable.has(`${firstOrdinal}-${lastOrdinal}`) ? 'failed' : 'no-room')
        droppedRanges.push({ start, end })
        addSegment(segments, firstOrdinal, lastOrdinal, count, 'dropped', 0)
        continue
      }
      const tokensOf = choice.kind === 'summary' ? choice.summary.tokens : choice.kind === 'merge' ? choice.tokens : compaction!.estimate
      summaryTokens += tokensOf
      addSegment(segments, firstOrdinal, lastOrdinal, count, 'summarised', tokensOf)
      if (choice.kind === 'summary') {
        packed.push(packedSummary(choice.summary))
        summaries.push({
          first_ordinal: firstOrdinal,
          last_ordinal: lastOrdinal,
          run_id: choice.summary.runId,
          tokens: choice.summary.tokens,
          reused: !compaction!.madeNow.has(`${firstOrdinal}-${lastOrdinal}`),
        })
        continue
      }
      if (choice.kind === 'merge') for (const input of choice.of) if (compaction!.summaryOf(input) === null) needed.push(input)
      needed.push(choice.kind === 'merge' ? { ...choice.block, of: choice.of } : choice.block)
      packed.push({ ordinal: firstOrdinal, kind: 'summary', treatment: 'summarised', content: null, tokens: tokensOf })
    }
    if (plan.gap) {
      reasons.add('unsealed')
      droppedRanges.push(plan.gap)
    }
  } else if (keptFrom > anchorEnd) droppedRanges.push({ start: anchorEnd, end: keptFrom })
  if (plan?.gap) addSegment(segments, entries[plan.gap.start]!.ordinal, entries[plan.gap.end - 1]!.ordinal, plan.gap.end - plan.gap.start, 'dropped', 0)
  else if (!plan && keptFrom > anchorEnd) addSegment(segments, entries[anchorEnd]!.ordinal, entries[keptFrom - 1]!.ordinal, keptFrom - anchorEnd, 'dropped', 0)
  const dropped =
    droppedRanges.length === 0
      ? null
      : {
          dropped: droppedRanges.reduce((n, r) => n + r.end - r.start, 0),
          start_ordinal: entries[droppedRanges[0]!.start]!.ordinal,
          end_ordinal: entries[droppedRanges.at(-1)!.end - 1]!.ordinal,
        }
  const summaryParts = packed.length
  let nextKept = 0
  let nextOmitted = 0
  for (let i = keptFrom; i < currentStart; i++) {
    if (omittedIndex[nextOmitted] === i) {
      nextOmitted++
      const ordinal = entries[i]!.ordinal
      addSegment(segments, ordinal, ordinal, 1, 'omitted', 0)
      continue
    }
    const rendering = keptRendering[nextKept++]!
    const part = (rendering.packed ??= packedOf(entries[i]!.ordinal, entries[i]!.kind, rendering, rendering.truncated ? 'truncated' : 'verbatim'))
    addSegment(segments, part.ordinal, part.ordinal, 1, part.treatment, part.tokens)
    packed.push(part)
  }
  for (const item of current) {
    if (item.entry) addSegment(segments, item.ordinal, item.ordinal, 1, 'verbatim', item.rendering.tokens)
    packed.push(packedWhole(item))
  }

  const historyEnd = packed.length - current.length
  const total = saturatingAdd(tokens.instructions, tokens.tools, tokens.anchors, summaryTokens, keptTokens, tokens.current)
  const config: ConfigWarning[] = dropped ? [historyDropped(dropped, budget.history_mode ?? 'summarize', plan === null ? null : reasons)] : []
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
          summaries: summaryTokens,
          current: tokens.current,
          total,
        },
        segments,
        summaries,
        dropped,
        attachments_left_out: leftOut,
      },
      estimatedTokens: total,
      oldestVisited,
      needed,
      verbatimStart: keptFrom,
      firstSummary: plan?.firstSummary ?? null,
      stablePrefixEnds: [...new Set([summaryParts, historyEnd])].filter((n) => n > 0),
    },
    warnings: { config, translation },
  }
}

/** History parts as sent are made once per rendering and shared by later turns (never changed). */
const packedOf = (ordinal: number, kind: PartKind, rendering: Rendering, treatment: PackedPart['treatment']): PackedPart => ({
  ordinal,
  kind: rendering.content?.type ?? kind,
  treatment,
  content: rendering.content,
  tokens: rendering.tokens,
})
/** Anchors and the current exchange are listed as verbatim (docs/guide/context.md). */
const packedWhole = (item: PackItem): PackedPart => packedOf(item.ordinal, item.entry?.kind ?? item.body!.type, item.rendering, 'verbatim')

type DropReason = 'failed' | 'no-room' | 'earlier' | 'unsealed'

const DROP_REASONS: Record<DropReason, string> = {
  failed: 'their compaction run failed (a later turn tries again)',
  'no-room': 'even a merged summary of them did not fit the history budget',
  earlier: 'an earlier turn dropped them for want of room, and summaries go on after them',
  unsealed: 'they are not in a sealed block yet and did not fit verbatim',
}

/** `reasons`: why `summarize` dropped what it dropped; null when it did not plan summaries. */
function historyDropped(dropped: NonNullable<ContextManifest['dropped']>, mode: HistoryMode, reasons: ReadonlySet<DropReason> | null): ConfigWarning {
  const warning: ConfigWarning = { code: 'history_dropped', ...dropped }
  if (mode === 'drop_oldest') return warning
  const message = reasons
    ? `summaries replace the oldest history; these parts were dropped because ${[...reasons].map((r) => DROP_REASONS[r]).join('; ')}`
    : 'the oldest history was dropped as under drop_oldest: summaries are not made here'
  return { ...warning, history_mode: 'summarize', message }
}
