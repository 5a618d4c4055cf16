import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  IdempotencyKeyReusedError,
  InsufficientBalanceError,
  NotFoundError,
  RetryNotAllowedError,
  UnknownToolUseIdError,
} from '../../../src/domain/errors.ts'
import type { PartBody } from '../../../src/domain/parts.ts'
import { TOOL_CALL_TTL_MS, type PendingCall } from '../../../src/domain/turns/close-pending-calls.ts'
import {
  answersOnlyPendingCalls,
  decideMaxTokens,
  isRetryOfLatestFailedRun,
  keyIsUnused,
  rejectionError,
  tombstoneUnanswered,
  type AdmissionFacts,
  type AdmissionVerdict,
  type BudgetFacts,
  type RunStatus,
  type SubmissionForAdmission,
} from '../../../src/domain/turns/decide-admission.ts'
import { decideAdmission } from '../../../src/domain/turns/admission-rules.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'

const CHAT = 'chat-1'
const NOW = new Date('2030-06-01T12:00:00.000Z')
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString()

const call = (id: string, over: Partial<PendingCall> = {}): PendingCall => ({
  tool_use_id: id,
  tool_name: 'lookup',
  created_at: ago(60_000),
  run_status: 'succeeded',
  ...over,
})

const facts = (over: Partial<AdmissionFacts> = {}): AdmissionFacts => ({
  latestCustomerRun: null,
  pendingCalls: [],
  retried: null,
  keyUsedBy: null,
  ...over,
})

const prompt = (text = 'hi'): { body: PartBody } => ({ body: { type: 'prompt', text } })
const result = (id: string, text = 'ok'): { body: PartBody } => ({
  body: { type: 'tool_result', tool_use_id: id, tool_name: 'lookup', text, is_error: false, trust: 'customer_data' },
})
const submission = (input: { body: PartBody }[] = [prompt()], retryOf: string | null = null): SubmissionForAdmission => ({
  chatId: CHAT,
  request: { retry_of: retryOf },
  input,
})

const admitted = (v: AdmissionVerdict) => {
  if (v.kind !== 'admit') throw new Error(`expected admit, got ${JSON.stringify(v)}`)
  return v
}
const rejected = (v: AdmissionVerdict) => {
  if (v.kind !== 'reject') throw new Error(`expected reject, got ${JSON.stringify(v)}`)
  return v.rejection
}

describe('decideAdmission: retry_of (decisions §4 Retry)', () => {
  const failed = { id: 'run-9', status: 'failed' as const }

  test('the latest failed customer run of the chat may be retried; the retry names it', () => {
    const f = facts({ latestCustomerRun: failed, retried: { id: 'run-9', chatId: CHAT } })
    expect(isRetryOfLatestFailedRun(f, CHAT)).toBe(true)
    const v = admitted(decideAdmission(f, submission([], 'run-9'), NOW).value)
    expect(v.retryOf).toBe('run-9')
    expect(v.closures).toEqual([])
  })

  test('a run the ledger does not have for the organisation: 404 not_found', () => {
    const r = rejected(decideAdmission(facts({ latestCustomerRun: failed }), submission([], 'nope'), NOW).value)
    expect(r).toEqual({ rule: 'retry_of_not_found', retryOf: 'nope' })
    const e = rejectionError(r)
    expect(e).toBeInstanceOf(NotFoundError)
    expect(e.message).toBe('run nope not found')
  })

  test.each<[string, Partial<AdmissionFacts>]>([
    ['an earlier failed run', { latestCustomerRun: failed, retried: { id: 'run-1', chatId: CHAT } }],
    ['a run of another chat', { latestCustomerRun: failed, retried: { id: 'run-9', chatId: 'other' } }],
    ['the latest run, succeeded', { latestCustomerRun: { id: 'run-9', status: 'succeeded' }, retried: { id: 'run-9', chatId: CHAT } }],
    ['the latest run, cancelled', { latestCustomerRun: { id: 'run-9', status: 'cancelled' }, retried: { id: 'run-9', chatId: CHAT } }],
    ['the latest run, still running', { latestCustomerRun: { id: 'run-9', status: 'running' }, retried: { id: 'run-9', chatId: CHAT } }],
    ['any run of a chat without runs', { latestCustomerRun: null, retried: { id: 'run-9', chatId: CHAT } }],
  ])('%s: 409 retry_not_allowed naming the latest run', (_, over) => {
    const f = facts(over)
    const retryOf = f.retried!.id
    const r = rejected(decideAdmission(f, submission([], retryOf), NOW).value)
    expect(r).toEqual({ rule: 'retry_not_allowed', retryOf, latest: f.latestCustomerRun })
    const e = rejectionError(r)
    expect(e).toBeInstanceOf(RetryNotAllowedError)
    expect(e.details).toEqual({ run_id: retryOf, latest_run_id: f.latestCustomerRun?.id ?? null, latest_status: f.latestCustomerRun?.status ?? null })
  })

  test('property: a retry is admitted exactly when retry_of is the latest run of the chat and that run failed', () => {
    const status = fc.constantFrom<RunStatus>('running', 'succeeded', 'failed', 'cancelled')
    fc.assert(
      fc.property(
        fc.option(fc.record({ id: fc.constantFrom('a', 'b'), status })),
        fc.option(fc.record({ id: fc.constantFrom('a', 'b'), chatId: fc.constantFrom(CHAT, 'other') })),
        (latest, retried) => {
          const f = facts({ latestCustomerRun: latest, retried })
          const retryOf = retried?.id ?? 'a'
          const v = decideAdmission(f, submission([], retryOf), NOW).value
          const allowed = retried !== null && retried.chatId === CHAT && latest?.id === retried.id && latest.status === 'failed'
          expect(v.kind).toBe(allowed ? 'admit' : 'reject')
        },
      ),
    )
  })
})

describe('decideAdmission: idempotency (decisions §4)', () => {
  test('a key used within 24 h: 409 naming the first run, whatever its outcome', () => {
    expect(keyIsUnused(facts({ keyUsedBy: 'run-1' }))).toBe(false)
    const r = rejected(decideAdmission(facts({ keyUsedBy: 'run-1' }), submission(), NOW).value)
    expect(r).toEqual({ rule: 'idempotency_key_reused', runId: 'run-1' })
    const e = rejectionError(r)
    expect(e).toBeInstanceOf(IdempotencyKeyReusedError)
    expect(e.details).toEqual({ run_id: 'run-1' })
    expect(e.message).toContain('run-1')
  })

  test('an unused key (or none) admits', () => {
    expect(keyIsUnused(facts())).toBe(true)
    expect(decideAdmission(facts(), submission(), NOW).value.kind).toBe('admit')
  })

  test('order: retry before idempotency before unknown tool ids', () => {
    const all = facts({ keyUsedBy: 'run-1', latestCustomerRun: { id: 'run-2', status: 'succeeded' } })
    expect(rejected(decideAdmission(all, submission([], 'run-2'), NOW).value).rule).toBe('retry_of_not_found')
    expect(rejected(decideAdmission(all, submission([result('ghost')]), NOW).value).rule).toBe('idempotency_key_reused')
    expect(rejected(decideAdmission(facts(), submission([result('ghost')]), NOW).value).rule).toBe('unknown_tool_use_id')
  })
})

describe('decideAdmission: tool calls (decisions §4)', () => {
  const latest = { id: 'run-1', status: 'succeeded' as const }

  test('a tool_result for an id not pending in this chat: 422 unknown_tool_use_id, listing the unknown and the pending ids', () => {
    const f = facts({ latestCustomerRun: latest, pendingCalls: [call('c1'), call('c2')] })
    expect(answersOnlyPendingCalls(f.pendingCalls, ['c1', 'x'])).toBe(false)
    const r = rejected(decideAdmission(f, submission([result('c1'), result('x'), result('y')]), NOW).value)
    expect(r).toEqual({ rule: 'unknown_tool_use_id', unknownIds: ['x', 'y'], pendingIds: ['c1', 'c2'] })
    const e = rejectionError(r)
    expect(e).toBeInstanceOf(UnknownToolUseIdError)
    expect(e.message).toBe('no pending tool call in this chat has id x, y')
    expect(e.details).toEqual({ tool_use_ids: ['x', 'y'], pending: ['c1', 'c2'] })
  })

  test('any tool_result to a chat with nothing pending is unknown', () => {
    expect(rejected(decideAdmission(facts(), submission([result('c1')]), NOW).value).rule).toBe('unknown_tool_use_id')
  })

  test('every pending call is closed: answered ones by their result, the others by a tombstone, in pending order', () => {
    const f = facts({ latestCustomerRun: latest, pendingCalls: [call('c1'), call('c2', { tool_name: 'clock' }), call('c3')] })
    const v = admitted(decideAdmission(f, submission([result('c2')]), NOW).value)
    expect(v.closures).toEqual([
      { tool_use_id: 'c1', tool_name: 'lookup', tombstone: 'abandoned' },
      { tool_use_id: 'c2', tool_name: 'clock', tombstone: null },
      { tool_use_id: 'c3', tool_name: 'lookup', tombstone: 'abandoned' },
    ])
    expect(v.tombstones).toEqual([
      { type: 'tool_result', text: '', is_error: true, tool_name: 'lookup', tool_use_id: 'c1', trust: 'trusted', tombstone_reason: 'abandoned' },
      { type: 'tool_result', text: '', is_error: true, tool_name: 'lookup', tool_use_id: 'c3', trust: 'trusted', tombstone_reason: 'abandoned' },
    ])
    expect(v.closesCallsOf).toBe('run-1')
  })

  test('tombstone reasons: expired past 24 h (whatever the run), cancelled for a cancelled or failed run, abandoned otherwise', () => {
    const f = facts({
      latestCustomerRun: latest,
      pendingCalls: [
        call('old', { created_at: ago(TOOL_CALL_TTL_MS + 1) }),
        call('day', { created_at: ago(TOOL_CALL_TTL_MS) }),
        call('can', { run_status: 'cancelled' }),
        call('fail', { run_status: 'failed' }),
        call('oldfail', { run_status: 'failed', created_at: ago(TOOL_CALL_TTL_MS + 1) }),
        call('ok'),
      ],
    })
    const v = admitted(decideAdmission(f, submission(), NOW).value)
    expect(Object.fromEntries(v.closures.map((c) => [c.tool_use_id, c.tombstone]))).toEqual({
      old: 'expired',
      day: 'abandoned',
      can: 'cancelled',
      fail: 'cancelled',
      oldfail: 'expired',
      ok: 'abandoned',
    })
  })

  test('an answer to an expired call still closes it by result', () => {
    const f = facts({ latestCustomerRun: latest, pendingCalls: [call('old', { created_at: ago(30 * 3600_000) })] })
    const v = admitted(decideAdmission(f, submission([result('old')]), NOW).value)
    expect(v.closures).toEqual([{ tool_use_id: 'old', tool_name: 'lookup', tombstone: null }])
    expect(v.tombstones).toEqual([])
  })

  test('expiry is decided by the `now` passed in, nothing else: the same facts at two instants', () => {
    const f = facts({ latestCustomerRun: latest, pendingCalls: [call('c', { created_at: '2030-06-01T00:00:00.000Z' })] })
    const at = (iso: string) => admitted(decideAdmission(f, submission(), new Date(iso)).value).closures[0]!.tombstone
    expect(at('2030-06-02T00:00:00.000Z')).toBe('abandoned')
    expect(at('2030-06-02T00:00:00.001Z')).toBe('expired')
  })

  test('nothing pending: no closures, no tombstones, no run whose calls are closed', () => {
    const v = admitted(decideAdmission(facts({ latestCustomerRun: latest }), submission(), NOW).value)
    expect(v).toEqual({ kind: 'admit', closures: [], tombstones: [], closesCallsOf: null, retryOf: null })
  })

  test('property: admitted ⇔ every answered id is pending; then each pending call is closed once, tombstoned ⇔ unanswered', () => {
    const ids = fc.constantFrom<string>('a', 'b', 'c', 'd', 'e')
    fc.assert(
      fc.property(
        fc.uniqueArray(ids),
        fc.array(ids, { maxLength: 6 }),
        fc.integer({ min: 0, max: 3 * TOOL_CALL_TTL_MS }),
        fc.constantFrom<PendingCall['run_status']>('succeeded', 'failed', 'cancelled'),
        (pendingIds, answered, age, status) => {
          const pending = pendingIds.map((id) => call(id, { created_at: ago(age), run_status: status }))
          const v = decideAdmission(facts({ latestCustomerRun: latest, pendingCalls: pending }), submission(answered.map((id) => result(id))), NOW).value
          const allKnown = answered.every((id) => pendingIds.includes(id))
          expect(v.kind).toBe(allKnown ? 'admit' : 'reject')
          if (v.kind === 'reject') {
            expect(v.rejection).toMatchObject({ rule: 'unknown_tool_use_id', unknownIds: answered.filter((id) => !pendingIds.includes(id)) })
            return
          }
          expect(v.closures.map((c) => c.tool_use_id)).toEqual(pendingIds)
          for (const c of v.closures) expect(c.tombstone === null).toBe(answered.includes(c.tool_use_id))
          expect(v.tombstones.map((t) => t.tool_use_id)).toEqual(pendingIds.filter((id) => !answered.includes(id)))
          const expected = age > TOOL_CALL_TTL_MS ? 'expired' : status === 'succeeded' ? 'abandoned' : 'cancelled'
          for (const t of v.tombstones) expect(t.tombstone_reason).toBe(expected)
          expect(tombstoneUnanswered(v.closures)).toEqual(v.tombstones)
        },
      ),
    )
  })
})

describe('decideMaxTokens (decisions §4 Balance)', () => {
  // $1 per million input tokens, $2 per million output tokens: 1e-6 and 2e-6 USD a token.
  const model: BudgetFacts['model'] = { rates: { input: '1', output: '2', currency: 'USD' }, tiers: [], max_output_tokens: 8_000, context_window: 1_000_000 }
  const WHOLE_WINDOW = { window: 1_000_000, longContext: false }
  const budget = (over: Partial<BudgetFacts> = {}): BudgetFacts => ({
    balance: '100',
    model,
    markupPercent: '0',
    inputTokens: 1_000,
    requestedMaxTokens: null,
    ...over,
  })

  test('402 when the balance cannot pay the input plus one output token', () => {
    // 1000 input tokens cost 0.001; one output token 0.000002.
    const d = decideMaxTokens(budget({ balance: '0.001' }))
    expect(d.value).toEqual({ kind: 'reject', rejection: { rule: 'insufficient_balance', balance: '0.001', estimatedInputTokens: 1_000 } })
    const e = rejectionError((d.value as { rejection: Parameters<typeof rejectionError>[0] }).rejection)
    expect(e).toBeInstanceOf(InsufficientBalanceError)
    expect(e.message).toBe("the balance of 0.00 USD cannot pay for this turn's input (about 1000 tokens) and one output token")
    expect(e.details).toEqual({ balance: '0.001', estimated_input_tokens: 1_000 })
    expect(e.hint).toBe('add credit to the organisation')
  })

  test('exactly the input plus one output token is enough, and max_tokens is then 1', () => {
    expect(decideMaxTokens(budget({ balance: '0.001002' })).value).toEqual({ kind: 'admit', maxTokens: 1, window: WHOLE_WINDOW })
  })

  test('max_tokens is the model ceiling when none is requested and the balance pays it, without a warning', () => {
    expect(decideMaxTokens(budget())).toEqual({ value: { kind: 'admit', maxTokens: 8_000, window: WHOLE_WINDOW }, warnings: [] })
  })

  test('a requested max_tokens is lowered to what the balance pays for, with max_tokens_lowered', () => {
    // After the input, 0.001 pays 500 output tokens.
    const d = decideMaxTokens(budget({ balance: '0.002', requestedMaxTokens: 4_000 }))
    expect(d.value).toEqual({ kind: 'admit', maxTokens: 500, window: WHOLE_WINDOW })
    expect(d.warnings).toEqual([
      { code: 'max_tokens_lowered', message: 'max_tokens was lowered from 4000 to 500 (what the balance pays for)', details: { requested: 4_000, applied: 500 } },
    ])
  })

  test('a requested max_tokens over the model ceiling is lowered to it, with the warning', () => {
    const d = decideMaxTokens(budget({ requestedMaxTokens: 10_000 }))
    expect(d.value).toEqual({ kind: 'admit', maxTokens: 8_000, window: WHOLE_WINDOW })
    expect(d.warnings.map((w) => [w.code, w.message])).toEqual([['max_tokens_lowered', 'max_tokens was lowered from 10000 to 8000 (the model ceiling)']])
  })

  test('a free model is never refused and never lowered by the balance', () => {
    const free = { ...model, rates: { input: '0', output: '0', currency: 'USD' } }
    expect(decideMaxTokens(budget({ model: free, balance: '0', requestedMaxTokens: 100 }))).toEqual({ value: { kind: 'admit', maxTokens: 100, window: WHOLE_WINDOW }, warnings: [] })
  })

  test('property: max_tokens is only ever lowered, never below 1, and what it allows is affordable', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.option(fc.integer({ min: 1, max: 20_000 })),
        (micro, inputTokens, requested) => {
          const balance = (micro / 1_000_000).toFixed(6)
          const d = decideMaxTokens(budget({ balance, inputTokens, requestedMaxTokens: requested }))
          const costOf = (output: number) => (inputTokens * 1 + output * 2) / 1_000_000
          if (d.value.kind === 'reject') {
            expect(Number(balance)).toBeLessThan(costOf(1) + 1e-12)
            return
          }
          const { maxTokens } = d.value
          expect(maxTokens).toBeGreaterThanOrEqual(1)
          expect(maxTokens).toBeLessThanOrEqual(requested ?? 8_000)
          expect(maxTokens).toBeLessThanOrEqual(8_000)
          expect(costOf(maxTokens)).toBeLessThanOrEqual(Number(balance) + 1e-9)
          expect(d.warnings.length > 0).toBe(requested !== null && maxTokens < requested)
        },
      ),
    )
  })

  describe('the output ceiling fits the window (docs/decisions/027-model-limits.md)', () => {
    // Claude Haiku 4.5's limits: a 200,000-token window, 64,000 output tokens.
    const haiku: BudgetFacts['model'] = { ...model, context_window: 200_000, max_output_tokens: 64_000 }
    // Claude Sonnet 4.5's: 200,000 standard, 1,000,000 with the context-1m beta.
    const sonnet: BudgetFacts['model'] = {
      ...model,
      context_window: 1_000_000,
      max_output_tokens: 64_000,
      long_context: { standard_window: 200_000, header: 'anthropic-beta', value: 'context-1m-2025-08-07' },
    }

    // docs/decisions/044-context-refusal-refit.md: max_tokens leaves a twentieth of the input free of the window.
    test('input plus the output ceiling never exceeds the window, less a twentieth of the input: 178,959 input tokens leave 21,041 − 8,948 of 64,000', () => {
      const d = decideMaxTokens(budget({ model: haiku, inputTokens: 178_959 }))
      expect(d).toEqual({ value: { kind: 'admit', maxTokens: 12_093, window: { window: 200_000, longContext: false } }, warnings: [] })
    })

    test("issue 33's Haiku turn: 152,139 corrected input at headroom 0.2 leaves 40,254, so a vendor counting 5% more (159,746) still fits 200,000", () => {
      const d = decideMaxTokens(budget({ model: haiku, inputTokens: 152_139, headroom: 0.2 }))
      expect(d.value).toMatchObject({ kind: 'admit', maxTokens: 40_254 })
      if (d.value.kind === 'admit') expect(159_746 + d.value.maxTokens).toBeLessThanOrEqual(200_000)
    })

    test("the slack never takes the output the budget's headroom reserves: an 8,192 window at headroom 0.1 keeps 820", () => {
      const small = { ...haiku, context_window: 8_192, max_output_tokens: 4_096 }
      expect(decideMaxTokens(budget({ model: small, inputTokens: 7_372, headroom: 0.1 })).value).toMatchObject({ maxTokens: 820 })
      // Without headroom, the window less a twentieth of the input.
      expect(decideMaxTokens(budget({ model: small, inputTokens: 6_000 })).value).toMatchObject({ maxTokens: 8_192 - 6_000 - 300 })
    })

    test('a requested max_tokens the window cannot hold is lowered, naming the window', () => {
      // 10,000 left, less a twentieth of 190,000, is 500: the least useful output (512) is kept.
      const d = decideMaxTokens(budget({ model: haiku, inputTokens: 190_000, requestedMaxTokens: 20_000 }))
      expect(d.value).toMatchObject({ kind: 'admit', maxTokens: 512 })
      expect(d.warnings).toEqual([
        {
          code: 'max_tokens_lowered',
          message: "max_tokens was lowered from 20000 to 512 (what the context window leaves after the input, with a margin for the vendor's count)",
          details: { requested: 20_000, applied: 512 },
        },
      ])
    })

    test('the window is measured in the vendor count: the corrected input, not the estimate', () => {
      const d = decideMaxTokens(budget({ model: haiku, inputTokens: 150_000, correctedInputTokens: 187_500 }))
      expect(d.value).toMatchObject({ kind: 'admit', maxTokens: 12_500 - 9_375 })
    })

    test('below the standard window, a long-context model is sent without the opt-in and its output fits the standard window', () => {
      const d = decideMaxTokens(budget({ model: sonnet, inputTokens: 150_000 }))
      expect(d.value).toEqual({ kind: 'admit', maxTokens: 50_000 - 7_500, window: { window: 200_000, longContext: false } })
    })

    test('past the standard window (less the least useful output), the opt-in is needed and the whole window holds', () => {
      const d = decideMaxTokens(budget({ model: sonnet, inputTokens: 199_600 }))
      expect(d.value).toEqual({ kind: 'admit', maxTokens: 64_000, window: { window: 1_000_000, longContext: true } })
      expect(decideMaxTokens(budget({ model: sonnet, inputTokens: 199_488 })).value).toMatchObject({ window: { longContext: false }, maxTokens: 512 })
    })

    test('property: input plus max_tokens stays within the window in force whenever the input leaves the least useful output', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 999_488 }), fc.option(fc.integer({ min: 1, max: 200_000 })), (inputTokens, requested) => {
          const d = decideMaxTokens(budget({ model: sonnet, balance: '1000000', inputTokens, requestedMaxTokens: requested }))
          if (d.value.kind !== 'admit') throw new Error('a balance of a million pays any turn')
          expect(inputTokens + d.value.maxTokens).toBeLessThanOrEqual(d.value.window.window)
          // The margin for the vendor's count, where the window leaves more than the least useful output.
          const left = d.value.window.window - inputTokens
          if (d.value.maxTokens > Math.min(512, left)) expect(inputTokens + Math.ceil(inputTokens / 20) + d.value.maxTokens).toBeLessThanOrEqual(d.value.window.window)
          expect(d.value.window.longContext).toBe(inputTokens + 512 > 200_000)
        }),
      )
    })
  })
})

describe('decideMaxTokens with sandbox/echo’s catalogue entry and the 5 % platform markup (test/actors/admission.test.ts "balance")', () => {
  // The entry the HTTP tests run on: 1.00 in and 2.00 out per million tokens.
  const echoEntry = loadCatalogue().entries.find((e) => e.name === 'sandbox/echo')!
  const INPUT = 1_234
  const onEcho = (balance: string, requestedMaxTokens: number | null = null, inputTokens = INPUT) =>
    decideMaxTokens({ balance, model: echoEntry, markupPercent: '5', inputTokens, requestedMaxTokens })
  // The input plus one output token, marked up: (1234 × 1.00 + 2.00) / 1e6 × 1.05.
  const oneToken = new Decimal(INPUT).mul('1.00').plus('2.00').div(1_000_000).mul('1.05')

  test('402 exactly when the balance cannot pay the estimated input plus one output token; exactly enough runs with max_tokens 1', () => {
    expect(echoEntry.rates).toMatchObject({ input: '1.00', output: '2.00' })
    expect(onEcho('0').value).toMatchObject({ kind: 'reject', rejection: { rule: 'insufficient_balance' } })
    expect(onEcho(oneToken.minus('0.0000000001').toFixed()).value).toMatchObject({ kind: 'reject', rejection: { rule: 'insufficient_balance' } })
    expect(onEcho(oneToken.toFixed()).value).toMatchObject({ kind: 'admit', maxTokens: 1 })
  })

  test('lowers max_tokens to what the balance pays for, with max_tokens_lowered', () => {
    // A short prompt's input, as in the HTTP test ('/long 500' in an empty chat).
    const input = 20
    const inputCost = new Decimal(input).mul('1.00').div(1_000_000).mul('1.05')
    const affordable = new Decimal('0.0001').minus(inputCost).mul(1_000_000).div('2.10').floor().toNumber()
    expect(affordable).toBeLessThan(1000)
    const d = onEcho('0.0001', 1000, input)
    expect(d.value).toMatchObject({ kind: 'admit', maxTokens: affordable })
    expect(d.warnings).toEqual([{ code: 'max_tokens_lowered', message: expect.any(String), details: { requested: 1000, applied: affordable } }])
  })

  test('lowers max_tokens to the model’s ceiling with a warning; never raises it, and then warns about nothing', () => {
    const ceiling = onEcho('10', 100_000)
    expect(ceiling.value).toMatchObject({ kind: 'admit', maxTokens: echoEntry.max_output_tokens })
    expect(ceiling.warnings).toEqual([
      { code: 'max_tokens_lowered', message: expect.any(String), details: { requested: 100_000, applied: echoEntry.max_output_tokens } },
    ])
    expect(onEcho('10', 64)).toEqual({ value: { kind: 'admit', maxTokens: 64, window: expect.any(Object) }, warnings: [] })
  })
})
