import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { createLanguageModels } from '../../src/providers/language-models.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { prose } from '../e2e/prose.ts'
import { startReplayServer, type ReplayServer } from '../e2e/vendor-replay-server.ts'
import { injectApi } from '../helpers/inject-api.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { deltaText, parseSse, type SseFrame } from '../helpers/turns.ts'

/**
 * Context packing (decisions §5) through the HTTP API of one app in process (moved from
 * test/e2e/: nothing here needs a server process): turns through the app, the manifest read back
 * from GET /api/v1/runs/{id}, and for vendor models the request body the loopback replay server
 * recorded. The app is configured as the server process was (SANDBOX=on, DEEPSEEK_* and MISTRAL_*
 * pointed at the replay server, the dev organisation bootstrapped). Shows the acceptance list:
 *   1. a chat grown to 10× the window of sandbox/echo-8k keeps answering under a published
 *      drop_oldest budget, with the history_dropped warning, the manifest and the usage agreeing
 *      turn by turn (and, moved to a 128k model, the chat gets its older history back whole);
 *      the platform default, summarize, is shown in test/http/compaction.test.ts;
 *   2. a published retention policy visibly cuts an older tool result in what the model receives
 *      (`/context`) and lowers the input tokens billed;
 *   3. an older attachment a model cannot take is sent as a marker while the ledger keeps its bytes
 *      (a text-only model; mistral's 8 pictures a request; markers that no longer fit).
 */

const DEEPSEEK_KEY = 'sk-replay-deepseek-key'
const MISTRAL_KEY = 'replay-mistral-key'

const ECHO_8K_WINDOW = 8192
/** floor(8192 × (1 − 0.1)), the platform default headroom. */
const ECHO_8K_INPUT_BUDGET = 7372
/** The platform default retention pins the first two packable parts (anchor_parts: 2). */
const DEFAULT_ANCHORS = 2
/** ~2,000 tokens a turn (a ~1,000-token prompt and its echo): 42 turns hold > 10× the 8k window. */
const GROWN_TURNS = 42

/** A 1×1 transparent PNG (67 bytes). */
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
const PNG_BYTES = Buffer.from(PNG_BASE64, 'base64').length


type HistoryItem = { ordinal: number; part: PartBody; media?: { data_base64?: string | null; byte_len: number; mime: string }[] }
type Turn = { frames: SseFrame[]; runId: string; last: SseFrame; configWarnings: any[]; translationWarnings: any[] }

/**
 * The prompt tokens a sandbox turn was billed for. Decisions §6 has the sandbox report the prefix
 * repeated from the chat's previous request as cache reads rather than input; today it reports no
 * cache reads, so this is `usage.input_tokens` itself, and must equal the manifest's estimate.
 */
const promptTokens = (t: Turn): number => t.last.data.usage.input_tokens + t.last.data.usage.cache_read_tokens

describe('context packing through the HTTP API', () => {
  let replay: ReplayServer
  let ctx: TestContext
  let auth = { authorization: '' }

  const { api, postTurn, ok } = injectApi(() => ctx, () => auth)

  const newChat = async (namespace?: string): Promise<string> => (await ok('/api/v1/chats', { method: 'POST', body: namespace ? { namespace } : {} }, 201)).id

  /** One turn that must stream to a `done` (HTTP 200, well-ordered head). */
  const turn = async (chatId: string, body: Record<string, unknown>): Promise<Turn> => {
    const answer = await postTurn(chatId, body)
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}`)
    const frames = answer.frames
    const trace = frames.map((f) => f.event).join(',')
    expect(frames.slice(0, 3).map((f) => f.event), trace).toEqual(['run', 'config_warnings', 'translation_warnings'])
    const last = frames.at(-1)!
    expect(last.event, `${trace}\n${JSON.stringify(last.data)}`).toBe('done')
    return {
      frames,
      runId: frames[0]!.data.run_id,
      last,
      configWarnings: frames[1]!.data.warnings,
      translationWarnings: frames[2]!.data.warnings,
    }
  }

  const run = (runId: string) => ok(`/api/v1/runs/${runId}`)

  /** The whole ledger of a chat, oldest first, paging forward. */
  const ledger = async (chatId: string, include: 'none' | 'full' = 'none'): Promise<HistoryItem[]> => {
    const all: HistoryItem[] = []
    let after = 0
    for (;;) {
      const page = await ok(`/api/v1/chats/${chatId}/history?limit=100&include=${include}&after_ordinal=${after}`)
      all.push(...page.data)
      if (!page.has_more || page.data.length === 0) return all
      after = page.last_ordinal
    }
  }

  /** Manifest invariants of decisions §5.4 that hold for every run. */
  const expectConsistentContext = (manifest: any, partsInLedger: number) => {
    const c = manifest.context
    const t = c.tokens
    expect(t.total).toBe(t.instructions + t.tools + t.anchors + t.history + t.summaries + t.current)
    expect(t.total).toBeLessThanOrEqual(c.input_budget)
    expect(manifest.estimated_input_tokens).toBe(t.total)
    expect(c.summaries).toEqual([])
    // Segments cover every packable ordinal once, in ledger order, merged by treatment.
    expect(c.segments.reduce((n: number, s: any) => n + s.parts, 0)).toBe(partsInLedger)
    for (const [i, s] of c.segments.entries()) {
      expect(s.first_ordinal).toBeLessThanOrEqual(s.last_ordinal)
      if (i > 0) {
        expect(s.first_ordinal).toBeGreaterThan(c.segments[i - 1].last_ordinal)
        expect(s.treatment).not.toBe(c.segments[i - 1].treatment)
      }
    }
    const droppedSegments = c.segments.filter((s: any) => s.treatment === 'dropped')
    if (c.dropped === null) expect(droppedSegments).toEqual([])
    else {
      expect(droppedSegments).toEqual([
        { first_ordinal: c.dropped.start_ordinal, last_ordinal: c.dropped.end_ordinal, parts: c.dropped.dropped, treatment: 'dropped', tokens: 0 },
      ])
    }
  }

  beforeAll(async () => {
    replay = await startReplayServer()
    // As the server process had it: SANDBOX=on and the two vendors' keys, so those three providers
    // are active; their base URLs on the replay server.
    const env = {
      DEEPSEEK_API_KEY: DEEPSEEK_KEY,
      DEEPSEEK_BASE_URL: replay.baseUrl('deepseek'),
      MISTRAL_API_KEY: MISTRAL_KEY,
      MISTRAL_BASE_URL: replay.baseUrl('mistral'),
    }
    const catalogue = loadCatalogue().entries.filter((e) => ['sandbox', 'deepseek', 'mistral'].includes(e.provider))
    ctx = await createTestApp({ catalogue, languageModelFor: createLanguageModels(env) })
    auth = { authorization: `Bearer ${bootstrapDevOrganisation(ctx.store)!.key}` }
  })

  afterEach(() => replay.clearQueues())

  afterAll(async () => {
    await ctx?.close()
    await replay?.close()
  })

  describe('1. a chat grown to 10× the window of sandbox/echo-8k keeps answering', () => {
    /**
     * Grows one chat turn by turn with ~1,000-token prompts (each echoed back, so ~2,000 tokens a
     * turn) and checks every turn against the ledger read before it: what must be dropped is the
     * oldest non-anchor history that the newest whole history does not leave room for.
     */
    const grow = async (namespace: string | undefined, mode: 'summarize' | 'drop_oldest', turns: number) => {
      const chatId = await newChat(namespace)
      const seen = { firstDropTurn: -1, lastDropped: 0, lastTokens: null as any, historyTokens: 0 }
      let before: HistoryItem[] = []
      for (let i = 0; i < turns; i++) {
        const text = prose(i, 1000)
        const t = await turn(chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text }] })
        expect(t.last.data.stop_reason, JSON.stringify(t.last.data)).toBe('end_turn')
        expect(deltaText(t.frames, 'text') === `echo: ${text}`).toBe(true)
        expect(t.last.data.compaction).toBeNull()

        const after = await ledger(chatId)
        expect(after).toHaveLength(2 * (i + 1))
        const promptOrdinal = after.at(-2)!.ordinal
        const manifest = (await run(t.runId)).manifest
        const c = manifest.context
        // One estimator: what packing budgeted is what the model was billed for.
        expect(promptTokens(t)).toBe(manifest.estimated_input_tokens)
        expect(c.input_budget).toBe(ECHO_8K_INPUT_BUDGET)
        expect(manifest.budget.budget.history_mode).toBe(mode)
        expectConsistentContext(manifest, before.length + 1)

        // What must be dropped, from the ledger as it stood: anchors and the new prompt are fixed.
        const tokensOf = (p: HistoryItem) => estimatePartTokens(p.part)
        const anchors = before.slice(0, DEFAULT_ANCHORS)
        const history = before.slice(DEFAULT_ANCHORS)
        const current = estimateTokens(text)
        expect(c.tokens.anchors).toBe(anchors.reduce((n, p) => n + tokensOf(p), 0))
        expect(c.tokens.current).toBe(current)
        expect(c.history_budget).toBe(ECHO_8K_INPUT_BUDGET - c.tokens.anchors - current)
        let keptTokens = 0
        let kept = 0
        while (kept < history.length && keptTokens + tokensOf(history[history.length - 1 - kept]!) <= c.history_budget) {
          keptTokens += tokensOf(history[history.length - 1 - kept]!)
          kept++
        }
        expect(c.tokens.history).toBe(keptTokens)
        const dropped = history.length - kept
        const warnings = t.configWarnings.filter((w) => w.code === 'history_dropped')
        if (dropped === 0) {
          expect(c.dropped).toBeNull()
          expect(warnings).toEqual([])
        } else {
          if (seen.firstDropTurn === -1) seen.firstDropTurn = i
          const range = { dropped, start_ordinal: history[0]!.ordinal, end_ordinal: history[dropped - 1]!.ordinal }
          expect(c.dropped).toEqual(range)
          expect(warnings).toHaveLength(1)
          if (mode === 'summarize') {
            expect(warnings[0]).toEqual({ code: 'history_dropped', ...range, history_mode: 'summarize', message: expect.any(String) })
            expect(warnings[0].message.length).toBeGreaterThan(0)
          } else {
            expect(warnings[0]).toMatchObject({ code: 'history_dropped', ...range })
            expect(warnings[0].history_mode ?? 'drop_oldest').toBe('drop_oldest')
            expect(warnings[0].message).toBeUndefined()
          }
          // The manifest names the anchors, the dropped range, then what was kept and the prompt.
          expect(c.segments[0]).toMatchObject({ first_ordinal: anchors[0]!.ordinal, last_ordinal: anchors[1]!.ordinal, parts: 2, treatment: 'verbatim' })
          expect(c.segments[1]).toMatchObject({ treatment: 'dropped', ...{ first_ordinal: range.start_ordinal, last_ordinal: range.end_ordinal } })
          expect(c.segments[2]).toEqual({
            first_ordinal: history[dropped]?.ordinal ?? promptOrdinal,
            last_ordinal: promptOrdinal,
            parts: kept + 1,
            treatment: 'verbatim',
            tokens: keptTokens + current,
          })
          expect(c.segments).toHaveLength(3)
        }
        seen.lastDropped = dropped
        seen.lastTokens = c.tokens
        before = after
      }
      seen.historyTokens = before.reduce((n, p) => n + estimatePartTokens(p.part), 0)
      return { chatId, ...seen, parts: before.length }
    }

    let grownChat = ''

    test('under a published budget with history_mode drop_oldest', { timeout: 240_000 }, async () => {
      const namespace = 'packing/drop-oldest'
      const published = await ok('/api/v1/config/budgets', {
        method: 'POST',
        body: { budget: { version: 3, headroom: 0.1, history_mode: 'drop_oldest' }, namespace },
      })
      expect(published).toHaveLength(1)
      expect(published[0].budget.history_mode).toBe('drop_oldest')
      const resolved = await ok(`/api/v1/config/resolved-budget?namespace=${encodeURIComponent(namespace)}`)
      expect(resolved.budget.history_mode).toBe('drop_oldest')

      const started = Date.now()
      // Twice the turns: enough parts that the chat's kept history lets old bodies go (see the next test).
      const grown = await grow(namespace, 'drop_oldest', 2 * GROWN_TURNS)
      grownChat = grown.chatId
      expect(grown.historyTokens).toBeGreaterThanOrEqual(10 * ECHO_8K_WINDOW)
      expect(grown.firstDropTurn).toBeGreaterThan(0)
      expect(grown.firstDropTurn).toBeLessThan(5)
      console.info(
        `[packing] drop_oldest: ${2 * GROWN_TURNS} turns, ${grown.parts} parts, ${grown.historyTokens} tokens in the ledger; first drop at turn ${grown.firstDropTurn + 1}; ` +
          `last turn dropped ${grown.lastDropped} parts; last context tokens ${JSON.stringify(grown.lastTokens)}; ${Date.now() - started} ms`,
      )
    })

    test('the grown chat moved to sandbox/echo (128k): older history comes back whole, read again from the ledger', { timeout: 60_000 }, async () => {
      expect(grownChat).not.toBe('')
      const before = await ledger(grownChat)
      const t = await turn(grownChat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/context' }] })
      const manifest = (await run(t.runId)).manifest
      const c = manifest.context
      expect(promptTokens(t)).toBe(manifest.estimated_input_tokens)
      expect(c.input_budget).toBe(115_200)
      expectConsistentContext(manifest, before.length + 1)
      // ~170k tokens do not fit 115,200 either, but far more than on the 8k model: the oldest go.
      expect(c.dropped).not.toBeNull()
      expect(c.dropped.start_ordinal).toBe(before[DEFAULT_ANCHORS]!.ordinal)
      const keptParts = before.filter((p, i) => i < DEFAULT_ANCHORS || p.ordinal > c.dropped.end_ordinal)
      expect(keptParts.length).toBeGreaterThan(100)
      // What the model received is every kept part's text, in order, then the prompt.
      const seen = JSON.parse(deltaText(t.frames, 'text'))
      const sentTexts = seen.messages.flatMap((m: any) => m.content.map((item: any) => item.text))
      expect(sentTexts).toEqual([...keptParts.map((p) => (p.part as { text: string }).text), '/context'])
      expect(c.tokens.history + c.tokens.anchors).toBe(keptParts.reduce((n, p) => n + estimatePartTokens(p.part), 0))
      console.info(`[packing] moved to sandbox/echo: ${keptParts.length} of ${before.length} parts sent, ${c.dropped.dropped} dropped, ${c.tokens.total} tokens`)
    })
  })

  describe('2. a published retention policy changes what the model receives', () => {
    test('an older tool result is cut with a visible marker in the /context answer, and fewer input tokens are billed', { timeout: 60_000 }, async () => {
      const namespace = 'packing/retention'
      const model = 'sandbox/echo'
      // ~3,000 tokens: under the platform default's `over: 4000`, so it is replayed whole until a policy says otherwise.
      const longResult = prose(7, 3000)
      const resultTokens = estimateTokens(longResult)
      expect(resultTokens).toBeGreaterThan(2900)
      expect(resultTokens).toBeLessThan(4000)

      /** A tool round trip, then two more turns so the result is no longer within verbatim_within. */
      const build = async () => {
        const chatId = await newChat(namespace)
        const call = await turn(chatId, { model, input: [{ type: 'prompt', text: '/tool lookup {"q":1}' }] })
        expect(call.last.data.stop_reason).toBe('tool_use')
        const toolUseId = call.last.data.pending_tool_calls[0].tool_use_id as string
        const answered = await turn(chatId, { model, input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'lookup', text: longResult }] })
        expect(answered.frames[0]!.data.closed_tool_calls).toEqual([toolUseId])
        expect(deltaText(answered.frames, 'text') === `echo: ${longResult}`).toBe(true)
        await turn(chatId, { model, input: [{ type: 'prompt', text: 'Thanks, that is what I needed.' }] })
        await turn(chatId, { model, input: [{ type: 'prompt', text: 'One more question before we finish.' }] })
        const parts = await ledger(chatId)
        const resultOrdinal = parts.find((p) => p.part.type === 'tool_result')!.ordinal
        return { chatId, resultOrdinal }
      }
      /** `/context`: the model's answer is the context it received, as JSON. */
      const contextOf = async (chatId: string) => {
        const t = await turn(chatId, { model, input: [{ type: 'prompt', text: '/context' }] })
        const raw = deltaText(t.frames, 'text')
        const manifest = (await run(t.runId)).manifest
        expect(promptTokens(t)).toBe(manifest.estimated_input_tokens)
        // Everything but the answer to this turn was in the ledger when it was packed.
        expectConsistentContext(manifest, (await ledger(chatId)).length - 1)
        const json = JSON.parse(raw)
        const toolMessage = json.messages.find((m: any) => m.role === 'tool')
        expect(toolMessage.content).toHaveLength(1)
        expect(toolMessage.content[0]).toMatchObject({ type: 'tool-result', toolName: 'lookup', output: { type: 'text' } })
        return { raw, json, inputTokens: promptTokens(t), manifest, resultText: toolMessage.content[0].output.value as string }
      }
      const MARKER = /\[… (\d+) tokens truncated …\]/

      // Two chats in the same state: one asks for its context before the policy, one after.
      const before = await build()
      const after = await build()

      const seenBefore = await contextOf(before.chatId)
      expect(seenBefore.resultText).toBe(longResult)
      expect(seenBefore.raw).not.toMatch(MARKER)
      expect(seenBefore.manifest.context.segments.map((s: any) => s.treatment)).toEqual(['verbatim'])
      expect(seenBefore.manifest.config_versions.retention_policy).toBeNull()

      const rules = { version: 1, verbatim_within: 0.01, tools: { default: { result: { mode: 'always', to: 20 } } } }
      const policy = await ok('/api/v1/config/retention', { method: 'POST', body: { rules, namespace } })
      expect(policy.rules).toMatchObject(rules)

      const seenAfter = await contextOf(after.chatId)
      expect(seenAfter.manifest.config_versions.retention_policy).toBe(policy.id)
      // The result is cut to its first 20 tokens, with the marker saying how many were cut.
      const marker = MARKER.exec(seenAfter.resultText)
      expect(marker, seenAfter.resultText).not.toBeNull()
      expect(Number(marker![1])).toBe(resultTokens - 20)
      expect(seenAfter.resultText.startsWith(longResult.slice(0, 20))).toBe(true)
      expect(seenAfter.raw).toMatch(MARKER)
      // The manifest names the cut part, and the model was billed for less: exactly the cut.
      expect(seenAfter.manifest.context.segments).toContainEqual(
        expect.objectContaining({ first_ordinal: after.resultOrdinal, last_ordinal: after.resultOrdinal, parts: 1, treatment: 'truncated' }),
      )
      expect(seenAfter.inputTokens).toBeLessThan(seenBefore.inputTokens)
      expect(seenBefore.inputTokens - seenAfter.inputTokens).toBe(resultTokens - estimateTokens(seenAfter.resultText))
      // Everything else the model received is the same.
      const withoutResult = (json: any) => JSON.stringify(json.messages.filter((m: any) => m.role !== 'tool').map((m: any) => m.content.map((c: any) => c.text ?? c.toolName)))
      expect(withoutResult(seenAfter.json)).toBe(withoutResult(seenBefore.json))

      // The first chat, asked again under the policy, now sees the marker too; the ledger is untouched.
      const again = await contextOf(before.chatId)
      expect(again.resultText).toMatch(MARKER)
      const stored = (await ledger(before.chatId)).find((p) => p.ordinal === before.resultOrdinal)!
      expect(stored.part).toMatchObject({ type: 'tool_result', text: longResult })
      console.info(
        `[packing] retention: tool result ${resultTokens} tokens; /context input tokens ${seenBefore.inputTokens} before the policy, ${seenAfter.inputTokens} after; marker "${marker![0]}"`,
      )
    })
  })

  describe('3. an older attachment the model cannot take becomes a marker; the ledger keeps its bytes', () => {
    test('a PNG sent to sandbox/echo, then a turn on text-only deepseek/deepseek-v4-flash', { timeout: 60_000 }, async () => {
      const chatId = await newChat()
      // A first exchange: the platform default pins the first two parts as anchors; the picture comes after them.
      await turn(chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'Hello, I have a picture for you.' }] })
      const first = await turn(chatId, {
        model: 'sandbox/echo',
        input: [{ type: 'prompt', text: 'What is in this picture?', media: [{ mime: 'image/png', data_base64: PNG_BASE64, filename: 'dot.png' }] }],
      })
      expect(first.translationWarnings).toEqual([])
      const imageOrdinal = (await ledger(chatId))[2]!.ordinal

      const sent = replay.requestsTo('deepseek').length
      const partsBefore = (await ledger(chatId)).length
      const second = await turn(chatId, { model: 'deepseek/deepseek-v4-flash', input: [{ type: 'prompt', text: 'Describe it in words, please.' }] })
      const vendorRequests = replay.requestsTo('deepseek').slice(sent)
      expect(vendorRequests).toHaveLength(1)
      const body = vendorRequests[0]!.body
      expect(body.model).toBe('deepseek-v4-flash')
      const wire = JSON.stringify(body)
      const markerText = `[attachment dot.png (image/png, ${PNG_BYTES} bytes) not sent: `
      expect(wire).toContain(JSON.stringify(markerText).slice(1, -1))
      expect(wire).not.toContain(PNG_BASE64)
      expect(wire).not.toContain('image_url')
      expect(wire).not.toContain('data:image')
      // The marker rides in the picture's user message, after its text.
      const pictureMessage = JSON.stringify(body.messages.filter((m: any) => m.role === 'user')[1])
      expect(pictureMessage).toContain('What is in this picture?')
      expect(pictureMessage).toContain('not sent:')

      const replaced = second.translationWarnings.filter((w) => w.code === 'attachment_replaced_by_marker')
      expect(replaced).toEqual([{ code: 'attachment_replaced_by_marker', message: expect.any(String), details: { ordinal: imageOrdinal, mime: 'image/png' } }])
      const manifest = (await run(second.runId)).manifest
      expectConsistentContext(manifest, partsBefore + 1)
      expect(manifest.context.segments).toContainEqual({ first_ordinal: imageOrdinal, last_ordinal: imageOrdinal, parts: 1, treatment: 'truncated', tokens: expect.any(Number) })
      expect(manifest.warnings.translation).toContainEqual(replaced[0])

      // The ledger still holds the bytes, unchanged.
      const stored = (await ledger(chatId, 'full'))[2]!
      expect(stored.ordinal).toBe(imageOrdinal)
      expect(stored.media).toHaveLength(1)
      expect(stored.media![0]).toMatchObject({ mime: 'image/png', byte_len: PNG_BYTES, data_base64: PNG_BASE64 })

      // A model that takes images gets the file again.
      const back = await turn(chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/context' }] })
      expect(back.translationWarnings).toEqual([])
      const seen = JSON.parse(deltaText(back.frames, 'text'))
      expect(seen.messages[2].content).toContainEqual(expect.objectContaining({ type: 'file', mediaType: 'image/png', data: `<image/png, ${PNG_BYTES} bytes>` }))
      expect(deltaText(back.frames, 'text')).not.toContain('not sent:')
    })

    test("nine older images and mistral's limit of eight per request: the oldest becomes a marker", { timeout: 60_000 }, async () => {
      const chatId = await newChat()
      const media = Array.from({ length: 9 }, (_, i) => ({ mime: 'image/png', data_base64: PNG_BASE64, filename: `img-${i + 1}.png` }))
      await turn(chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'Nine pictures.', media }] })
      const imageOrdinal = (await ledger(chatId))[0]!.ordinal

      const sent = replay.requestsTo('mistral').length
      const second = await turn(chatId, { model: 'mistral/mistral-medium-3.5', input: [{ type: 'prompt', text: 'Which one is brightest?' }] })
      const vendorRequests = replay.requestsTo('mistral').slice(sent)
      expect(vendorRequests).toHaveLength(1)
      const userContent = vendorRequests[0]!.body.messages.find((m: any) => m.role === 'user').content as any[]
      const images = userContent.filter((c) => c.type === 'image_url')
      expect(images).toHaveLength(8)
      const texts = userContent.filter((c) => c.type === 'text').map((c) => c.text as string)
      expect(texts).toContainEqual(expect.stringContaining(`[attachment img-1.png (image/png, ${PNG_BYTES} bytes) not sent: `))
      expect(texts.join('\n')).not.toContain('img-2.png')

      const replaced = second.translationWarnings.filter((w) => w.code === 'attachment_replaced_by_marker')
      expect(replaced).toEqual([
        { code: 'attachment_replaced_by_marker', message: expect.any(String), details: { ordinal: imageOrdinal, mime: 'image/png', limit: 8 } },
      ])
      const stored = (await ledger(chatId, 'full'))[0]!
      expect(stored.media!.map((m) => m.data_base64)).toEqual(Array(9).fill(PNG_BASE64))
    })

    test('markers for attachments over the limit can cost more than the files: a part that no longer fits is dropped and counts nothing', { timeout: 60_000 }, async () => {
      // No anchors (a published policy without anchor_parts), so the picture prompt is ordinary history.
      const namespace = 'packing/no-anchors'
      await ok('/api/v1/config/retention', { method: 'POST', body: { rules: { version: 1 }, namespace } })
      const chatId = await newChat(namespace)
      // Twenty 1×1 pictures (a token each) in a prompt whose run fails: the prompt stays, no answer follows it.
      const media = Array.from({ length: 20 }, (_, i) => ({ mime: 'image/png', data_base64: PNG_BASE64, filename: `p${i + 1}.png` }))
      const failed = await postTurn(chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'pictures\n/fail', media }] })
      expect(failed.ok).toBe(false)
      const [picture] = await ledger(chatId)
      expect(picture!.part.type).toBe('prompt')
      const pictureTokens = estimateTokens('pictures\n/fail') + 20

      // A current prompt that leaves exactly the picture prompt's whole estimate for history on
      // mistral (input budget floor(128000 × 0.9) = 115200). Mistral takes 8 pictures a request:
      // the other 12 become markers, the part no longer fits, and it is dropped.
      const inputBudget = 115_200
      const text = textEstimatedAt(inputBudget - pictureTokens)
      expect(estimateTokens(text)).toBe(inputBudget - pictureTokens)
      const sent = replay.requestsTo('mistral').length
      const t = await turn(chatId, { model: 'mistral/mistral-small-3.2', input: [{ type: 'prompt', text }] })
      // Nothing of the dropped part was sent, so nothing about its pictures is warned of.
      expect(t.translationWarnings.filter((w) => w.code === 'attachment_replaced_by_marker')).toEqual([])
      expect(t.configWarnings).toContainEqual(expect.objectContaining({ code: 'history_dropped', dropped: 1, start_ordinal: picture!.ordinal }))
      const c = (await run(t.runId)).manifest.context
      expect(c.input_budget).toBe(inputBudget)
      expect(c.history_budget).toBe(pictureTokens)
      expect(c.dropped).toEqual({ dropped: 1, start_ordinal: picture!.ordinal, end_ordinal: picture!.ordinal })
      expect(c.tokens.history).toBe(0)
      expect(c.tokens.total).toBe(inputBudget - pictureTokens)
      expect(c.tokens.total).toBeLessThanOrEqual(c.input_budget)
      const body = replay.requestsTo('mistral').slice(sent)[0]!.body
      expect(body.messages).toHaveLength(1)
      expect(JSON.stringify(body)).not.toContain('image_url')
    })
  })
})

/**
 * Words whose estimate is exactly `tokens`. A text this long is estimated from samples with a margin
 * (src/domain/tokens/estimate-tokens.ts), so the word count is searched for (the estimate grows with
 * it), and a trailing letter or two fills a step the margin skips.
 */
function textEstimatedAt(tokens: number): string {
  const of = (k: number, tail: string) => `word${' word'.repeat(k - 1)}${tail}`
  let lo = 1
  let hi = tokens
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2)
    if (estimateTokens(of(mid, '')) <= tokens) lo = mid
    else hi = mid - 1
  }
  for (let k = lo; k >= lo - 8; k--) for (const tail of ['', ' a', ' a b', ' a b c']) if (estimateTokens(of(k, tail)) === tokens) return of(k, tail)
  throw new Error(`no text of words is estimated at exactly ${tokens} tokens`)
}
