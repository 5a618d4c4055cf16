/**
 * Property-based tests of the context packer (decisions §5): random ledgers, retention policies,
 * budgets and models; the packed context must respect the budget, never split a tool call from its
 * result, keep the fixed parts whole, describe itself exactly in the manifest, and not depend on
 * the caches kept on the history between turns.
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { CatalogueEntry, MediaPolicy } from '../../../src/domain/catalogue/catalogue-entry.ts'
import type { ContextBudget, RetentionRules, Truncation, TruncationShape } from '../../../src/domain/config/config-types.ts'
import type { MediaRef, PackedPart, RenderedPart, SentAttachment } from '../../../src/domain/context/context-types.ts'
import { estimatePartTokens, estimateRenderedTokens as estimateUnder } from '../../../src/domain/context/estimate-part-tokens.ts'
import { packContext, type NewPart, type PackInput, type PackResult } from '../../../src/domain/context/pack-context.ts'
import { PackingHistory, type HistoryEntry } from '../../../src/domain/context/packing-history.ts'
import { attachmentMarker, renderVerbatim } from '../../../src/domain/context/render-part.ts'
import { ContextTooLargeError } from '../../../src/domain/errors.ts'
import type { PartBody, PartKind, TombstoneReason, TrustLevel } from '../../../src/domain/parts.ts'

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const MIMES = ['image/png', 'image/jpeg', 'application/pdf', 'text/plain'] as const
const TOOL_NAMES = ['search', 'fetch', 'calc', 'read_file', 'read_dir', 'f_x'] as const
const WORDS = ['alpha', 'beta', 'gamma', 'the', 'quick', 'brown', 'fox', '42', '{', '}', '"', 'ünï', '—', 'lorem', 'ipsum', '\n', 'jumps', 'over']

const arbText = (max: number) => fc.array(fc.constantFrom(...WORDS), { maxLength: max }).map((w) => w.join(' '))
const arbShortText = fc.oneof({ weight: 4, arbitrary: arbText(12) }, { weight: 1, arbitrary: arbText(60) })

/** An attachment without its id (given when the ledger is assembled). */
type MediaSpec = Omit<MediaRef, 'mediaId'>
const arbMedia: fc.Arbitrary<MediaSpec> = fc.constantFrom(...MIMES).chain((mime) =>
  fc.record({
    mime: fc.constant(mime),
    // Tiny files cost less than the markers that replace them.
    byteLen: mime === 'text/plain' ? fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 400 })) : fc.integer({ min: 1, max: 200_000 }),
    filename: fc.option(fc.constantFrom('a.png', 'b.jpg', 'c.pdf', 'notes.txt'), { nil: null }),
    width: mime.startsWith('image/') ? fc.option(fc.integer({ min: 1, max: 1200 }), { nil: null }) : fc.constant(null),
    height: mime.startsWith('image/') ? fc.option(fc.integer({ min: 1, max: 1200 }), { nil: null }) : fc.constant(null),
    pageCount: mime === 'application/pdf' ? fc.option(fc.integer({ min: 1, max: 2 }), { nil: null }) : fc.constant(null),
  }),
)
const arbMediaList = fc.oneof({ weight: 3, arbitrary: fc.constant([] as MediaSpec[]) }, { weight: 1, arbitrary: fc.array(arbMedia, { minLength: 1, maxLength: 2 }) })

const arbArguments = fc.oneof(
  arbText(10).map((q) => JSON.stringify({ q })),
  arbText(30).map((q) => JSON.stringify({ query: q, limit: 3, nested: { deep: [q] } })),
  arbText(8),
  fc.constantFrom('', 'null', '[1,2]', '{"a":1}'),
)

type OutputSpec =
  | { kind: 'reasoning'; text: string }
  | { kind: 'message'; text: string; refusal: string | null }
  | { kind: 'call'; tool: string; args: string }
const arbOutput: fc.Arbitrary<OutputSpec> = fc.oneof(
  fc.record({ kind: fc.constant('reasoning' as const), text: arbShortText }),
  fc.record({ kind: fc.constant('message' as const), text: arbShortText, refusal: fc.option(arbText(6), { nil: null, freq: 6 }) }),
  fc.record({ kind: fc.constant('call' as const), tool: fc.constantFrom(...TOOL_NAMES), args: arbArguments }),
)

type ResultSpec = { text: string; isError: boolean; trust: TrustLevel; tombstone: TombstoneReason | null; media: MediaSpec[]; order: number }
const arbResult: fc.Arbitrary<ResultSpec> = fc.record({
  text: arbShortText,
  isError: fc.boolean(),
  trust: fc.constantFrom<TrustLevel>('trusted', 'customer_data', 'untrusted'),
  tombstone: fc.option(fc.constantFrom<TombstoneReason>('abandoned', 'cancelled', 'expired'), { nil: null, freq: 4 }),
  media: arbMediaList,
  order: fc.integer({ min: 0, max: 9 }),
})

type RunSpec = { prompt: { text: string; media: MediaSpec[] } | null; results: ResultSpec[]; outputs: OutputSpec[] }
const arbRun: fc.Arbitrary<RunSpec> = fc.record({
  prompt: fc.option(fc.record({ text: arbShortText, media: arbMediaList }), { nil: null, freq: 3 }),
  results: fc.array(arbResult, { maxLength: 4 }),
  outputs: fc.array(arbOutput, { maxLength: 5 }),
})

/** A ledger part, packable, with its ledger ordinal. */
type LedgerEntry = { ordinal: number; kind: PartKind; runId: string; body: PartBody; media: MediaRef[] }

type Ledger = { entries: LedgerEntry[]; pending: { id: string; tool: string; runId: string }[]; runIds: string[] }

const MAX_PARTS = 60

/** Runs one after the other: each run's input answers (or closes with tombstones) the calls of the run before. */
function assembleLedger(runs: RunSpec[], gaps: number[]): Ledger {
  const entries: LedgerEntry[] = []
  let ordinal = 0
  let mediaCount = 0
  let callCount = 0
  const withIds = (media: MediaSpec[]): MediaRef[] => media.map((m) => ({ mediaId: `m${++mediaCount}`, ...m }))
  const push = (runId: string, body: PartBody, media: MediaRef[] = []) => {
    ordinal += gaps[entries.length % gaps.length] ?? 1
    entries.push({ ordinal, kind: body.type, runId, body, media })
  }
  let pending: { id: string; tool: string; runId: string }[] = []
  const runIds: string[] = []
  runs.forEach((run, r) => {
    if (entries.length >= MAX_PARTS) return
    const runId = `run${r}`
    runIds.push(runId)
    for (const body of resultBodies(pending, run.results)) push(runId, body.body, withIds(body.media))
    if (run.prompt) push(runId, { type: 'prompt', text: run.prompt.text }, withIds(run.prompt.media))
    pending = []
    for (const out of run.outputs) {
      if (out.kind === 'reasoning') push(runId, { type: 'reasoning', text: out.text })
      else if (out.kind === 'message') push(runId, { type: 'message', text: out.text, refusal: out.refusal })
      else {
        const id = `call${++callCount}`
        push(runId, { type: 'tool_call', tool_use_id: id, tool_name: out.tool, arguments: out.args })
        pending.push({ id, tool: out.tool, runId })
      }
    }
  })
  const cut = entries.slice(0, MAX_PARTS)
  const answered = new Set(cut.flatMap((e) => (e.body.type === 'tool_result' ? [e.body.tool_use_id] : [])))
  const last = cut.at(-1)?.runId
  const open = cut.flatMap((e) => (e.body.type === 'tool_call' && e.runId === last && !answered.has(e.body.tool_use_id) ? [{ id: e.body.tool_use_id, tool: e.body.tool_name, runId: e.runId }] : []))
  return { entries: cut, pending: open, runIds: [...new Set(cut.map((e) => e.runId))] }
}

/** Results for pending calls, in a random order; a call with no result spec is closed by a tombstone. */
function resultBodies(pending: { id: string; tool: string }[], specs: ResultSpec[]): { body: PartBody; media: MediaSpec[] }[] {
  const made = pending.map((call, i) => {
    const spec = specs[i]
    if (!spec || spec.tombstone) {
      const body: PartBody = { type: 'tool_result', text: '', is_error: true, tool_name: call.tool, tool_use_id: call.id, trust: 'trusted', tombstone_reason: spec?.tombstone ?? 'abandoned' }
      return { body, media: [] as MediaSpec[], order: spec?.order ?? -1 }
    }
    const body: PartBody = { type: 'tool_result', text: spec.text, is_error: spec.isError, tool_name: call.tool, tool_use_id: call.id, trust: spec.trust }
    return { body, media: spec.media, order: spec.order }
  })
  return made.sort((a, b) => a.order - b.order)
}

// Retention rules (decisions §5.2), valid as published: version 1, no shadowed rule, `over` with
// to < over, `always` with to = 0 only with `keep`.
const arbShape = fc.constantFrom<TruncationShape>('head', 'tail', 'head_and_tail')
const arbTruncation: fc.Arbitrary<Truncation> = fc.oneof(
  fc.constant<Truncation>({ mode: 'keep' }),
  fc
    .record({ to: fc.integer({ min: 0, max: 25 }), keep: fc.option(arbShape, { nil: undefined }) })
    .map(({ to, keep }): Truncation => (to === 0 && keep === undefined ? { mode: 'always', to, keep: 'tail' } : keep === undefined ? { mode: 'always', to } : { mode: 'always', to, keep })),
  fc
    .record({ to: fc.integer({ min: 0, max: 25 }), extra: fc.integer({ min: 1, max: 40 }), keep: fc.option(arbShape, { nil: undefined }) })
    .map(({ to, extra, keep }): Truncation => (keep === undefined ? { mode: 'over', to, over: to + extra } : { mode: 'over', to, over: to + extra, keep })),
)
const arbThreshold = fc.oneof(fc.constantFrom(0, 0.05, 0.1, 0.25, 0.5, 0.9, 1), fc.double({ min: 0, max: 1, noNaN: true }))

const mimeCovers = (p: string, q: string) => p === '*/*' || p === q || (p.endsWith('/*') && q.startsWith(p.slice(0, -1)))
const globCovers = (p: string, q: string) => p === '*' || p === q || (p.endsWith('*') && !p.slice(0, -1).includes('*') && q.startsWith(p.slice(0, -1)))
/** Patterns in order with every one an earlier pattern covers left out: a rule list that validates. */
const unshadowed = (patterns: string[], covers: (p: string, q: string) => boolean) =>
  patterns.filter((q, i) => !patterns.slice(0, i).some((p) => covers(p, q)))

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined })
const arbToolTreatment = fc.record({ arguments: optional(arbTruncation), result: optional(arbTruncation) }, { requiredKeys: [] })

const arbRules: fc.Arbitrary<RetentionRules> = fc
  .record(
    {
      media: fc.record(
        {
          default: arbThreshold,
          rules: fc
            .shuffledSubarray(['image/png', 'image/jpeg', 'image/*', 'application/pdf', 'text/plain', 'text/*', '*/*'])
            .map((ps) => unshadowed(ps, mimeCovers))
            .chain((ps) => fc.tuple(...ps.map((mime) => arbThreshold.map((retain) => ({ mime, retain }))))),
        },
        { requiredKeys: [] },
      ),
      tools: fc.record(
        {
          default: arbToolTreatment,
          rules: fc
            .shuffledSubarray(['search', 'fetch', 'calc', 'read_file', 'read_*', 'f*', '*'])
            .map((ps) => unshadowed(ps, globCovers))
            .chain((ps) => fc.tuple(...ps.map((tool) => arbToolTreatment.map((t) => ({ ...t, tool }))))),
          errors: fc.option(arbTruncation, { nil: null }),
          mark_truncations: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      text: fc.record({ prompt: arbTruncation, message: arbTruncation }, { requiredKeys: [] }),
      reasoning: arbThreshold,
      verbatim_within: arbThreshold,
      anchor_parts: fc.integer({ min: 0, max: 6 }),
    },
    { requiredKeys: [] },
  )
  .map((r) => ({ version: 1, ...stripUndefined(r) }))

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined).map(([k, v]) => [k, v !== null && typeof v === 'object' && !Array.isArray(v) ? stripUndefined(v) : v])) as T
}

/** Headroom as a whole number of thousandths, so the input budget is computed exactly here too. */
const arbBudget = fc
  .record({
    headroomMille: fc.integer({ min: 0, max: 900 }),
    history_mode: optional(fc.constantFrom('drop_oldest' as const, 'summarize' as const)),
    max_history_tokens: fc.option(fc.integer({ min: 32_000, max: 200_000 }), { nil: null, freq: 2 }),
  })
  .map(({ headroomMille, history_mode, max_history_tokens }): ContextBudget & { headroomMille: number } => ({
    version: 3,
    headroom: headroomMille / 1000,
    headroomMille,
    ...(history_mode ? { history_mode } : {}),
    max_history_tokens,
  }))

const arbPolicy: fc.Arbitrary<MediaPolicy> = fc.record({
  mime_types: fc.subarray([...MIMES]),
  max_bytes_per_attachment: fc.constantFrom(100, 50_000, 10_000_000),
  max_attachments_per_request: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
})

/** Sandbox models (Anthropic's image rule), whose request limit never binds here: decision 045's bound has tests of its own. */
const estimateRenderedTokens = (part: Parameters<typeof estimateUnder>[0]) => estimateUnder(part, 'anthropic')
type Model = Pick<CatalogueEntry, 'context_window' | 'media' | 'provider' | 'max_request_bytes'>
const arbModel: fc.Arbitrary<Model> = fc.record({
  provider: fc.constant('sandbox'),
  max_request_bytes: fc.constant(Number.MAX_SAFE_INTEGER),
  context_window: fc.oneof(fc.integer({ min: 2_000, max: 8_000 }), fc.integer({ min: 2_000, max: 40_000 })),
  media: fc.record({
    user: arbPolicy,
    tool_result: arbPolicy,
    assistant: fc.constant<MediaPolicy>({ mime_types: [], max_bytes_per_attachment: 0 }),
    max_attachments_per_part: fc.constant(4),
    configured: fc.boolean(),
  }),
})

type Scenario = {
  ledger: Ledger
  newParts: NewPart[]
  currentRuns: string[]
  instructionsTokens: number
  toolsTokens: number
  rules: RetentionRules
  budget: ContextBudget & { headroomMille: number }
  model: Model
}

const arbScenario: fc.Arbitrary<Scenario> = fc
  .record({
    runs: fc.array(arbRun, { maxLength: 16, size: 'max' }),
    gaps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 8 }),
    newPrompt: fc.option(fc.record({ text: arbShortText, media: arbMediaList }), { nil: null, freq: 4 }),
    close: fc.boolean(),
    closing: fc.array(arbResult, { maxLength: 4 }),
    retry: fc.option(fc.nat(), { nil: null, freq: 3 }),
    strayResult: fc.boolean(),
    instructionsTokens: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3_000 })),
    toolsTokens: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 })),
    rules: arbRules,
    budget: arbBudget,
    model: arbModel,
    // Half the time the window is sized to the ledger: the fixed parts and this share of the history fit.
    fitPercent: fc.option(fc.oneof(fc.constantFrom(0, 100), fc.integer({ min: 0, max: 110 })), { nil: null, freq: 2 }),
  })
  .map(({ runs, gaps, newPrompt, close, closing, retry, strayResult, instructionsTokens, toolsTokens, rules, budget, model, fitPercent }): Scenario => {
    const ledger = assembleLedger(runs, gaps)
    const newParts: NewPart[] = []
    const currentRuns: string[] = []
    let mediaCount = 0
    const withIds = (media: MediaSpec[]): MediaRef[] => media.map((m) => ({ mediaId: `new${++mediaCount}`, ...m }))
    if (close && ledger.pending.length > 0) {
      // The submission answers the latest run's calls: that run is part of the current exchange.
      for (const r of resultBodies(ledger.pending, closing)) newParts.push({ body: r.body, media: withIds(r.media) })
      currentRuns.push(ledger.pending[0]!.runId)
    }
    if (retry !== null && ledger.runIds.length > 0) currentRuns.push(ledger.runIds[ledger.runIds.length - 1 - (retry % Math.min(3, ledger.runIds.length))]!)
    if (retry !== null && ledger.runIds.length === 0) currentRuns.push('run-unknown')
    if (newPrompt) newParts.push({ body: { type: 'prompt', text: newPrompt.text }, media: withIds(newPrompt.media) })
    // A result whose call is not in the history is not sent.
    if (strayResult) newParts.push({ body: { type: 'tool_result', text: 'stray', is_error: false, tool_name: 'calc', tool_use_id: 'call-none', trust: 'trusted' }, media: [] })
    const scenario = { ledger, newParts, currentRuns, instructionsTokens, toolsTokens, rules, budget, model }
    if (fitPercent === null) return scenario
    const layout = expectedLayout(scenario)
    const history = ledger.entries.slice(layout.anchorEnd, layout.currentStart).reduce((n, e) => n + estimatePartTokens(e.body, e.media), 0)
    const wanted = expectedFixedTokens(scenario, layout).total + Math.floor((history * fitPercent) / 100)
    const contextWindow = Math.max(500, Math.ceil((wanted * 1000) / (1000 - budget.headroomMille)))
    return { ...scenario, model: { ...model, context_window: contextWindow } }
  })

// ---------------------------------------------------------------------------------------------
// Building histories and packing
// ---------------------------------------------------------------------------------------------

const entryOf = (e: LedgerEntry): HistoryEntry => ({
  ordinal: e.ordinal,
  kind: e.kind,
  runId: e.runId,
  toolUseId: e.body.type === 'tool_call' || e.body.type === 'tool_result' ? e.body.tool_use_id : null,
  tokens: estimatePartTokens(e.body, e.media),
  media: e.media,
  body: e.body,
  renders: null,
})

function historyOf(entries: readonly LedgerEntry[]): PackingHistory {
  const history = new PackingHistory()
  for (const e of entries) history.append(entryOf(e))
  return history
}

const inputOf = (s: Scenario, history: PackingHistory): PackInput => ({
  history,
  newParts: s.newParts,
  currentRuns: s.currentRuns,
  instructionsTokens: s.instructionsTokens,
  toolsTokens: s.toolsTokens,
  rules: s.rules,
  budget: s.budget,
  model: s.model,
})

type Outcome = { kind: 'packed'; result: Extract<PackResult, { kind: 'packed' }> } | { kind: 'too-large'; error: ContextTooLargeError }

function pack(input: PackInput): Outcome {
  try {
    const result = packContext(input)
    if (result.kind !== 'packed') throw new Error(`needs-bodies (before ${result.before}) although every body is present`)
    return { kind: 'packed', result }
  } catch (error) {
    if (error instanceof ContextTooLargeError) return { kind: 'too-large', error }
    throw error
  }
}

/** An outcome as plain data, for comparing two packs. */
const plain = (o: Outcome) => (o.kind === 'packed' ? o : { kind: o.kind, message: o.error.message, details: o.error.details })

const OUTPUT_KINDS = new Set<PartKind>(['message', 'reasoning', 'tool_call'])

// ---------------------------------------------------------------------------------------------
// An independent account of what packing must hold to (decisions §5.1, §5.3)
// ---------------------------------------------------------------------------------------------

/** Spans packed together or not at all: a call and its result, reasoning and the call it led to. */
function joinedSpans(entries: readonly LedgerEntry[]): [number, number][] {
  const spans: [number, number][] = []
  const callAt = new Map<string, number>()
  entries.forEach((e, i) => {
    if (e.body.type === 'tool_call') {
      callAt.set(e.body.tool_use_id, i)
      for (const r of leadingReasoning(entries, i)) spans.push([r, i])
    }
    if (e.body.type === 'tool_result') {
      const c = callAt.get(e.body.tool_use_id)
      if (c !== undefined) spans.push([c, i])
    }
  })
  return spans
}

/** The reasoning parts of the call's run just before it (across the run's other output parts). */
function leadingReasoning(entries: readonly LedgerEntry[], call: number): number[] {
  const found: number[] = []
  for (let j = call - 1; j >= 0; j--) {
    const e = entries[j]!
    if (e.runId !== entries[call]!.runId || (e.kind !== 'reasoning' && e.kind !== 'message' && e.kind !== 'tool_call')) break
    if (e.kind === 'reasoning') found.push(j)
  }
  return found
}

type Layout = { anchorEnd: number; currentStart: number }

function expectedLayout(s: Scenario): Layout {
  const entries = s.ledger.entries
  const n = entries.length
  const spans = joinedSpans(entries)
  const canStart = (i: number) => !spans.some(([a, b]) => a < i && i <= b)
  let currentStart = n
  for (const run of s.currentRuns) {
    const first = entries.findIndex((e) => e.runId === run)
    if (first !== -1) currentStart = Math.min(currentStart, first)
  }
  while (currentStart > 0 && currentStart < n && !canStart(currentStart)) currentStart--
  let anchorEnd = Math.min(s.rules.anchor_parts ?? 0, currentStart)
  while (anchorEnd < currentStart && !canStart(anchorEnd)) anchorEnd++
  return { anchorEnd, currentStart }
}

const carrier = (body: PartBody, model: Model): MediaPolicy | null =>
  body.type === 'prompt' ? model.media.user : body.type === 'tool_result' ? model.media.tool_result : null

/** A fixed part as it must be sent: whole, attachments the model cannot take as markers. */
function expectedWhole(body: PartBody, media: readonly MediaRef[], model: Model): RenderedPart {
  const whole = renderVerbatim(body, media)
  if (whole.type !== 'prompt' && whole.type !== 'tool_result') return whole
  const policy = carrier(body, model)
  const attachments = media.map((m): SentAttachment => {
    if (policy === null || !policy.mime_types.includes(m.mime)) return { kind: 'marker', media: m, text: attachmentMarker(m, `the model does not take ${m.mime} here`) }
    if (m.byteLen > policy.max_bytes_per_attachment) return { kind: 'marker', media: m, text: attachmentMarker(m, 'it is larger than the model takes') }
    return { kind: 'file', media: m }
  })
  return { ...whole, attachments }
}

const LIMIT_MARKER = /not sent: over the model's limit of \d+ attachments per request in this carrier\]$/

/** `actual` is `expected` but for files the per-request attachment limit turned into markers. */
function expectSameApartFromLimitMarkers(actual: RenderedPart | null, expected: RenderedPart) {
  expect(actual).not.toBeNull()
  const a = actual!
  if ((a.type !== 'prompt' && a.type !== 'tool_result') || (expected.type !== 'prompt' && expected.type !== 'tool_result')) {
    expect(a).toEqual(expected)
    return
  }
  expect({ ...a, attachments: [] }).toEqual({ ...expected, attachments: [] })
  expect(a.attachments.length).toBe(expected.attachments.length)
  a.attachments.forEach((got, i) => {
    const want = expected.attachments[i]!
    if (want.kind === 'file' && got.kind === 'marker') {
      expect(got.media).toEqual(want.media)
      expect(got.text).toMatch(LIMIT_MARKER)
    } else expect(got).toEqual(want)
  })
}

const sentNewParts = (s: Scenario) => {
  const calls = new Set(s.ledger.entries.flatMap((e) => (e.body.type === 'tool_call' ? [e.body.tool_use_id] : [])))
  return s.newParts.filter((p) => p.body.type !== 'tool_result' || calls.has(p.body.tool_use_id))
}

/** The fixed parts' tokens before any per-request attachment limit (what decides context_too_large). */
function expectedFixedTokens(s: Scenario, layout: Layout) {
  const entries = s.ledger.entries
  const anchors = entries.slice(0, layout.anchorEnd).reduce((n, e) => n + estimateRenderedTokens(expectedWhole(e.body, e.media, s.model)), 0)
  const current =
    entries.slice(layout.currentStart).reduce((n, e) => n + estimateRenderedTokens(expectedWhole(e.body, e.media, s.model)), 0) +
    sentNewParts(s).reduce((n, p) => n + estimateRenderedTokens(expectedWhole(p.body, p.media, s.model)), 0)
  return { anchors, current, total: s.instructionsTokens + s.toolsTokens + anchors + current }
}

const expectedInputBudget = (s: Scenario) => Math.floor((s.model.context_window * (1000 - s.budget.headroomMille)) / 1000)

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/** Packs `s` fresh; a context_too_large is allowed only when the fixed parts do not fit. */
function packScenario(s: Scenario): { outcome: Outcome; layout: Layout; history: PackingHistory } {
  const history = historyOf(s.ledger.entries)
  const outcome = pack(inputOf(s, history))
  const layout = expectedLayout(s)
  const fixed = expectedFixedTokens(s, layout)
  const window = expectedInputBudget(s)
  if (outcome.kind === 'too-large') {
    const details = outcome.error.details as { input_budget: number; estimated_tokens: number; fixed_tokens: Record<string, number> }
    expect(details.input_budget).toBe(window)
    expect(details.estimated_tokens).toBeGreaterThan(window)
    const { instructions, tools, anchors, current } = details.fixed_tokens
    expect({ instructions, tools }).toEqual({ instructions: s.instructionsTokens, tools: s.toolsTokens })
    expect(details.estimated_tokens).toBe(instructions! + tools! + anchors! + current!)
    if (fixed.total > window) expect({ anchors, current }).toEqual({ anchors: fixed.anchors, current: fixed.current })
    // Else the fixed parts fit whole, but markers for attachments over a per-request limit made them larger.
    else expect(s.model.media.user.max_attachments_per_request != null || s.model.media.tool_result.max_attachments_per_request != null).toBe(true)
  } else {
    expect(fixed.total).toBeLessThanOrEqual(window)
    expect(outcome.result.value.context.input_budget).toBe(window)
  }
  return { outcome, layout, history }
}

type Role = 'anchor' | 'history' | 'current' | 'new'
function roleOfPacked(part: PackedPart, layout: Layout, indexOf: Map<number, number>): Role {
  if (part.ordinal === -1) return 'new'
  const i = indexOf.get(part.ordinal)!
  return i < layout.anchorEnd ? 'anchor' : i >= layout.currentStart ? 'current' : 'history'
}

/** Per ledger entry, its treatment as the manifest's segments give it (checking the cover on the way). */
function treatmentsFromSegments(s: Scenario, packed: Extract<PackResult, { kind: 'packed' }>['value']) {
  const entries = s.ledger.entries
  const treatments: string[] = []
  const { segments } = packed.context
  segments.forEach((seg, k) => {
    expect(seg.parts).toBeGreaterThan(0)
    const from = treatments.length
    expect(from + seg.parts).toBeLessThanOrEqual(entries.length)
    expect(seg.first_ordinal).toBe(entries[from]!.ordinal)
    expect(seg.last_ordinal).toBe(entries[from + seg.parts - 1]!.ordinal)
    if (k > 0) expect(seg.treatment).not.toBe(segments[k - 1]!.treatment)
    for (let i = 0; i < seg.parts; i++) treatments.push(seg.treatment)
  })
  expect(treatments.length).toBe(entries.length)
  return treatments
}

/** The payload retention rules may cut: the text or arguments of a part as sent. */
const payloadOf = (part: RenderedPart) => (part.type === 'tool_call' ? part.arguments : part.text)

const KEEP_ALL: Truncation = { mode: 'keep' }
/** Whether the part's payload is never cut under the rules (decisions §5.2: the first matching rule, `errors`). */
function isKept(body: PartBody, rules: RetentionRules): boolean {
  const tool = (name: string) => rules.tools?.rules?.find((r) => globCovers(r.tool, name)) ?? rules.tools?.default ?? {}
  const truncation: Truncation =
    body.type === 'prompt'
      ? (rules.text?.prompt ?? KEEP_ALL)
      : body.type === 'message'
        ? (rules.text?.message ?? KEEP_ALL)
        : body.type === 'tool_call'
          ? (tool(body.tool_name).arguments ?? KEEP_ALL)
          : body.type === 'tool_result'
            ? body.tombstone_reason
              ? KEEP_ALL
              : body.is_error && rules.tools?.errors
                ? rules.tools.errors
                : (tool(body.tool_name).result ?? KEEP_ALL)
            : KEEP_ALL
  return truncation.mode === 'keep'
}

/** The `retain` threshold of an attachment: the first media rule matching its type, else `default`. */
const mediaRetain = (mime: string, rules: RetentionRules) => {
  if (rules.media === undefined) return undefined
  const rule = rules.media.rules?.find((r) => mimeCovers(r.mime, mime))
  return rule ? rule.retain : rules.media.default
}

const deepEqual = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

const RUNS = Number(process.env.FC_RUNS ?? 150)
if (process.env.FC_SEED) fc.configureGlobal({ seed: Number(process.env.FC_SEED) })

describe('packContext, property-based (decisions §5)', () => {
  test('the packed history fits its budget and the token counts add up', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const { outcome, layout } = packScenario(s)
        if (outcome.kind !== 'packed') return
        const { value } = outcome.result
        const t = value.context.tokens
        expect(t.history).toBeLessThanOrEqual(value.context.history_budget)
        expect(t.total).toBe(t.instructions + t.tools + t.anchors + t.history + t.summaries + t.current)
        expect(value.estimatedTokens).toBe(t.total)
        expect(t.instructions).toBe(s.instructionsTokens)
        expect(t.tools).toBe(s.toolsTokens)
        // What the counts say is what was packed.
        const indexOf = new Map(s.ledger.entries.map((e, i) => [e.ordinal, i]))
        const byRole: Record<Role, number> = { anchor: 0, history: 0, current: 0, new: 0 }
        for (const part of value.parts) {
          expect(part.tokens).toBe(part.content ? estimateRenderedTokens(part.content) : 0)
          byRole[roleOfPacked(part, layout, indexOf)] += part.tokens
        }
        expect(t.anchors).toBe(byRole.anchor)
        expect(t.history).toBe(byRole.history)
        expect(t.current).toBe(byRole.current + byRole.new)
        // The history budget: at most what the input budget leaves the fixed parts as sent, capped. (It can be
        // less: markers for attachments over a per-request limit may make the fixed parts smaller after the walk.)
        const fixed = t.instructions + t.tools + t.anchors + t.current
        const left = value.context.input_budget - fixed
        const cap = s.budget.max_history_tokens
        expect(value.context.history_budget).toBeLessThanOrEqual(Math.max(0, cap === null || cap === undefined ? left : Math.min(left, cap)))
        expect(t.total).toBeLessThanOrEqual(value.context.input_budget)
      }),
      { numRuns: RUNS },
    )
  })

  test('never splits a tool call from its result, nor drops the reasoning that led to a kept call', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const { outcome } = packScenario(s)
        if (outcome.kind !== 'packed') return
        const { value } = outcome.result
        const entries = s.ledger.entries
        const treatments = treatmentsFromSegments(s, value)
        const packedCalls = new Set<string>()
        const packedResults = new Set<string>()
        for (const part of value.parts) {
          if (part.content?.type === 'tool_call') packedCalls.add(part.content.toolUseId)
          if (part.content?.type === 'tool_result') packedResults.add(part.content.toolUseId)
        }
        for (const id of packedResults) expect(packedCalls, `result ${id} without its call`).toContain(id)
        const resultsInLedger = new Set([
          ...entries.flatMap((e) => (e.body.type === 'tool_result' ? [e.body.tool_use_id] : [])),
          ...sentNewParts(s).flatMap((p) => (p.body.type === 'tool_result' ? [p.body.tool_use_id] : [])),
        ])
        for (const id of packedCalls) if (resultsInLedger.has(id)) expect(packedResults, `call ${id} without its result`).toContain(id)
        // Reasoning that led to a kept call is replayed or omitted, never dropped.
        entries.forEach((e, i) => {
          if (e.kind !== 'tool_call' || treatments[i] === 'dropped') return
          for (const r of leadingReasoning(entries, i)) expect(['verbatim', 'omitted']).toContain(treatments[r])
        })
        // And a dropped call takes its result (and a dropped result its call) with it.
        for (const [a, b] of joinedSpans(entries)) {
          if (entries[a]!.kind === 'reasoning') continue
          expect(treatments[a] === 'dropped').toBe(treatments[b] === 'dropped')
        }
      }),
      { numRuns: RUNS },
    )
  })

  test('holds the current exchange and the anchors verbatim', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const { outcome, layout } = packScenario(s)
        if (outcome.kind !== 'packed') return
        const { value } = outcome.result
        const entries = s.ledger.entries
        const byOrdinal = new Map(value.parts.filter((p) => p.ordinal !== -1).map((p) => [p.ordinal, p]))
        entries.forEach((e, i) => {
          if (i >= layout.anchorEnd && i < layout.currentStart) return
          const part = byOrdinal.get(e.ordinal)
          expect(part, `fixed part ${e.ordinal} is packed`).toBeDefined()
          expect(part!.treatment).toBe('verbatim')
          expectSameApartFromLimitMarkers(part!.content, expectedWhole(e.body, e.media, s.model))
        })
        // The new parts: every one whose call is known, in order, at the end.
        const sent = sentNewParts(s)
        expect(value.newPartsSent).toEqual(s.newParts.map((p) => sent.includes(p)))
        const fresh = value.parts.filter((p) => p.ordinal === -1)
        expect(fresh.length).toBe(sent.length)
        expect(value.parts.slice(value.parts.length - fresh.length).every((p) => p.ordinal === -1)).toBe(true)
        fresh.forEach((part, k) => {
          expect(part.treatment).toBe('verbatim')
          expectSameApartFromLimitMarkers(part.content, expectedWhole(sent[k]!.body, sent[k]!.media, s.model))
        })
      }),
      { numRuns: RUNS },
    )
  })

  test('the manifest covers every packable ordinal once, in order, and says what was dropped', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const { outcome, layout } = packScenario(s)
        if (outcome.kind !== 'packed') return
        const { value, warnings } = outcome.result
        const entries = s.ledger.entries
        const treatments = treatmentsFromSegments(s, value)
        // Segments agree with the packed parts, part by part, tokens included.
        const byOrdinal = new Map(value.parts.filter((p) => p.ordinal !== -1).map((p) => [p.ordinal, p]))
        const ordinals = value.parts.filter((p) => p.ordinal !== -1).map((p) => p.ordinal)
        expect(ordinals).toEqual([...ordinals].sort((a, b) => a - b))
        entries.forEach((e, i) => {
          const part = byOrdinal.get(e.ordinal)
          const treatment = treatments[i]!
          if (treatment === 'dropped') expect(part).toBeUndefined()
          else if (treatment === 'omitted') {
            expect(e.kind).toBe('reasoning')
            expect(part === undefined || part.content === null).toBe(true)
          } else {
            expect(part?.treatment).toBe(treatment)
          }
          if (i < layout.anchorEnd || i >= layout.currentStart) expect(treatment).toBe('verbatim')
        })
        let at = 0
        for (const seg of value.context.segments) {
          const tokens = entries.slice(at, at + seg.parts).reduce((n, e) => n + (byOrdinal.get(e.ordinal)?.tokens ?? 0), 0)
          expect(seg.tokens).toBe(tokens)
          at += seg.parts
        }
        // `dropped` is the one dropped segment, right after the anchors (drop_oldest), and warned of.
        const droppedSegments = value.context.segments.filter((seg) => seg.treatment === 'dropped')
        expect(droppedSegments.length).toBeLessThanOrEqual(1)
        const seg = droppedSegments[0]
        const warning = warnings.config.find((w) => w.code === 'history_dropped')
        if (seg) {
          expect(value.context.dropped).toEqual({ dropped: seg.parts, start_ordinal: seg.first_ordinal, end_ordinal: seg.last_ordinal })
          expect(seg.first_ordinal).toBe(entries[layout.anchorEnd]!.ordinal)
          expect(warning).toMatchObject(value.context.dropped!)
        } else {
          expect(value.context.dropped).toBeNull()
          expect(warning).toBeUndefined()
        }
        expect(value.context.summaries).toEqual([])
        expect(value.context.tokens.summaries).toBe(0)
      }),
      { numRuns: RUNS },
    )
  })

  test('the retention rules follow recency: reasoning, media and payloads of the history', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const { outcome, layout } = packScenario(s)
        if (outcome.kind !== 'packed') return
        const { value } = outcome.result
        // Markers for the per-request limit can change the history budget after recency was decided.
        const limited = value.parts.some((p) => p.content && 'attachments' in p.content && p.content.attachments.some((a) => a.kind === 'marker' && LIMIT_MARKER.test(a.text)))
        if (limited) return
        const entries = s.ledger.entries
        const treatments = treatmentsFromSegments(s, value)
        const byOrdinal = new Map(value.parts.filter((p) => p.ordinal !== -1).map((p) => [p.ordinal, p]))
        const within = (newer: number, t: number | undefined, absent: boolean) =>
          t === undefined ? absent : new Decimal(newer).lte(new Decimal(value.context.history_budget).mul(String(t)).floor())
        let newer = 0
        for (let i = layout.currentStart - 1; i >= layout.anchorEnd; i--) {
          const e = entries[i]!
          const part = byOrdinal.get(e.ordinal)
          if (treatments[i] !== 'dropped') {
            if (e.kind === 'reasoning') expect(treatments[i]).toBe(within(newer, s.rules.reasoning, true) ? 'verbatim' : 'omitted')
            else {
              const whole = renderVerbatim(e.body, e.media)
              const got = part!.content!
              // Within verbatim_within, or under a `keep` treatment: the payload is whole.
              if (within(newer, s.rules.verbatim_within, false) || isKept(e.body, s.rules)) expect(payloadOf(got)).toBe(payloadOf(whole))
              if (got.type === 'prompt' || got.type === 'tool_result') {
                got.attachments.forEach((a, k) => {
                  const m = e.media[k]!
                  const retained = within(newer, mediaRetain(m.mime, s.rules), true)
                  if (a.kind === 'file') expect(retained).toBe(true)
                  else if (a.text.includes('older than the retention policy')) expect(retained).toBe(false)
                })
              }
              expect(part!.treatment).toBe(deepEqual(got, whole) ? 'verbatim' : 'truncated')
            }
          }
          newer += estimatePartTokens(e.body, e.media)
        }
      }),
      { numRuns: RUNS },
    )
  })

  test('packing is deterministic, and the caches kept on the history do not change answers', () => {
    const arbIncremental = fc.record({ s: arbScenario, earlier: arbScenario, split: fc.nat(), mix: fc.boolean() })
    fc.assert(
      fc.property(arbIncremental, ({ s, earlier, split, mix }) => {
        const entries = s.ledger.entries
        const once = (input: PackInput) => plain(pack(input))
        // Twice with the same input: the second pack reads renderings the first kept.
        const history = historyOf(entries)
        const first = once(inputOf(s, history))
        const second = once(inputOf(s, history))
        expect(second).toEqual(first)

        // A history grown turn by turn (packed in between, under other rules and models too) packs as a fresh one.
        const k = entries.length === 0 ? 0 : split % (entries.length + 1)
        const grown = historyOf(entries.slice(0, k))
        const before: Scenario = { ...s, newParts: [], currentRuns: [] }
        once(inputOf(before, grown))
        if (mix) once(inputOf({ ...earlier, ledger: s.ledger, newParts: [], currentRuns: [] }, grown))
        // The same rules and model under another budget: other recency limits, the same kept renderings.
        once(inputOf({ ...before, budget: earlier.budget, instructionsTokens: earlier.instructionsTokens }, grown))
        once(inputOf(before, grown))
        for (const e of entries.slice(k)) {
          grown.append(entryOf(e))
          if (mix) once(inputOf(before, grown))
        }
        expect(grown.prefix).toEqual(history.prefix)
        expect(grown.canStart).toEqual(history.canStart)
        expect(once(inputOf(s, grown))).toEqual(first)
      }),
      { numRuns: Math.ceil((RUNS * 2) / 3) },
    )
  })

  test('bodies let go and read again on request (needs-bodies) pack as if they had stayed', () => {
    const arbRelease = fc.record({ s: arbScenario, from: fc.nat(), length: fc.nat(), keepRenders: fc.boolean(), warm: fc.boolean() })
    fc.assert(
      fc.property(arbRelease, ({ s, from, length, keepRenders, warm }) => {
        const entries = s.ledger.entries
        const expected = plain(pack(inputOf(s, historyOf(entries))))
        const history = historyOf(entries)
        if (warm) pack(inputOf(s, history))
        // As the chat's actor does: bodies (and, with them, renderings) of a range of entries are let go.
        const a = entries.length === 0 ? 0 : from % entries.length
        const b = Math.min(entries.length, a + (length % 40))
        for (let i = a; i < b; i++) {
          history.entries[i]!.body = null
          if (!keepRenders) history.entries[i]!.renders = null
        }
        const input = inputOf(s, history)
        let result: PackResult | null = null
        for (let round = 0; round <= entries.length + 1; round++) {
          try {
            result = packContext(input)
          } catch (error) {
            if (!(error instanceof ContextTooLargeError)) throw error
            expect({ kind: 'too-large', message: error.message, details: error.details }).toEqual(expected)
            return
          }
          if (result.kind === 'packed') break
          // Read back the bodies before `before`, which must include one that was let go.
          expect(result.before).toBeGreaterThan(a)
          expect(result.before).toBeLessThanOrEqual(entries.length)
          const missing = history.entries.slice(0, result.before).filter((e) => e.body === null).length
          expect(missing).toBeGreaterThan(0)
          history.entries.slice(0, result.before).forEach((e, i) => (e.body ??= entries[i]!.body))
        }
        expect(result?.kind).toBe('packed')
        expect({ kind: 'packed', result }).toEqual(expected)
      }),
      { numRuns: Math.ceil((RUNS * 2) / 3) },
    )
  })

  test('a history truncated and grown again (a run failed) packs as one built fresh', () => {
    fc.assert(
      fc.property(arbScenario, fc.nat(), (s, pick) => {
        const entries = s.ledger.entries
        if (s.ledger.runIds.length === 0) return
        const failed = s.ledger.runIds[pick % s.ledger.runIds.length]!
        const output = (e: LedgerEntry) => e.runId === failed && OUTPUT_KINDS.has(e.kind)
        const history = historyOf(entries)
        pack(inputOf({ ...s, newParts: [], currentRuns: [] }, history))
        const kept: LedgerEntry[] = entries.filter((e) => !output(e))
        const calls = new Set(kept.flatMap((e) => (e.body.type === 'tool_call' ? [e.body.tool_use_id] : [])))
        const survivors = kept.filter((e) => e.body.type !== 'tool_result' || calls.has(e.body.tool_use_id))
        // As the chat's actor does: truncate at the failed run, put back what is still packable.
        for (const entry of history.truncate(history.firstIndexOfRun(failed))) {
          if (entry.runId === failed && OUTPUT_KINDS.has(entry.kind)) continue
          if (entry.kind === 'tool_result' && entry.toolUseId !== null && !history.hasCall(entry.toolUseId)) continue
          history.append(entry)
        }
        const fresh = historyOf(survivors)
        expect(history.entries.map((e) => e.ordinal)).toEqual(fresh.entries.map((e) => e.ordinal))
        expect(history.prefix).toEqual(fresh.prefix)
        expect(history.canStart).toEqual(fresh.canStart)
        const t: Scenario = { ...s, ledger: { ...s.ledger, entries: survivors }, currentRuns: s.currentRuns.filter((r) => r !== failed), newParts: s.newParts.filter((p) => p.body.type !== 'tool_result') }
        const attempt = (h: PackingHistory) => plain(pack(inputOf(t, h)))
        expect(attempt(history)).toEqual(attempt(fresh))
      }),
      { numRuns: Math.ceil((RUNS * 2) / 3) },
    )
  })
})
