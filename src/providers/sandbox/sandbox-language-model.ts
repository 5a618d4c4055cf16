import { currentVendorCall } from '../vendor-call-record.ts'
import {
  APICallError,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4FinishReason,
  type LanguageModelV4FunctionTool,
  type LanguageModelV4StreamPart,
} from '@ai-sdk/provider'
import { randomUUID } from 'node:crypto'
import { estimateTokens, saturatingAdd } from '../../domain/tokens/estimate-tokens.ts'
import { describeContext } from './sandbox-context.ts'
import { estimatePromptTokens } from '../estimate-prompt-tokens.ts'
import { sandboxSummaryCall, type SandboxCompaction } from './sandbox-summary.ts'
import { createSandboxPrefixCache, prefixItems } from './sandbox-prefix-cache.ts'
import { newestTurn, readSandboxScript, type SandboxScript } from './sandbox-script.ts'
import { agentMove } from './sandbox-agent.ts'
import { createIoPacer } from '../io-pacer.ts'

const LOREM = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ')

/**
 * Provider options the run layer passes: whether this call retries a failed run (for /flaky), and
 * the key of the simulated prefix cache (the chat; compaction runs pass none and read no cache).
 */
export type SandboxCallOptions = { retry?: boolean; cacheKey?: string }

// The abort listener goes when the wait ends: one per delta would pile up on the run's signal.
const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve()
    const wake = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', wake)
      resolve()
    }
    const timer = setTimeout(wake, ms)
    signal?.addEventListener('abort', wake, { once: true })
  })

const failure = (modelId: string, message: string) =>
  new APICallError({ message, url: `sandbox://${modelId}`, requestBodyValues: {}, statusCode: 502, isRetryable: false })

/**
 * The limits the sandbox holds a request to, as a vendor does: its catalogue entry's window and input
 * limit (the app passes them: src/providers/language-models.ts). A model made without them (a test's
 * bare double) takes any request.
 */
export type SandboxLimits = { contextWindow: number; maxInputTokens?: number | null }

/**
 * A vendor's refusal of a request over its window, before the first byte: a 400 worded as Anthropic
 * words it ("prompt is too long: N tokens > M maximum"), naming the context window and both figures,
 * so Parley's recognition of context refusals can read the sandbox as it reads a vendor.
 */
export function contextRefusal(modelId: string, limits: SandboxLimits, input: number, maxTokens: number): APICallError | null {
  const inputLimit = Math.min(limits.contextWindow, limits.maxInputTokens ?? limits.contextWindow)
  let message: string | null = null
  if (input > inputLimit) message = `prompt is too long: ${input} tokens > ${inputLimit} maximum (the input the ${limits.contextWindow}-token context window takes)`
  else if (input + maxTokens > limits.contextWindow)
    message = `prompt is too long: ${input + maxTokens} tokens > ${limits.contextWindow} maximum (input ${input} + max_tokens ${maxTokens} exceed the context window)`
  if (message === null) return null
  return new APICallError({
    message,
    url: `sandbox://${modelId}`,
    requestBodyValues: {},
    statusCode: 400,
    responseBody: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }),
    isRetryable: false,
  })
}

/** Splits text into word deltas that concatenate back to it exactly. */
const wordDeltas = (text: string) => text.match(/\S+\s*|\s+/g) ?? []

/**
 * The text block: `/long N` gives N words; otherwise `echo: ` and the prompt's plain text (or the
 * tool results answered), left out only when the prompt is nothing but tool calls.
 */
function textDeltas(turn: ReturnType<typeof newestTurn>, script: SandboxScript, context: () => string): string[] {
  if (script.context) return wordDeltas(context())
  if (turn.kind === 'tool_results') return wordDeltas(`echo: ${turn.text}`)
  if (script.longWords !== null) return Array.from({ length: script.longWords }, (_, i) => `${i === 0 ? '' : ' '}${LOREM[i % LOREM.length]}`)
  if (script.text === '' && script.tools.length > 0) return []
  return wordDeltas(`echo: ${script.text}`)
}

/** The vendor model id of `sandbox/agent`: echo, but a user's turn that offers tools first calls one. */
export const AGENT_MODEL = 'agent'

/**
 * `sandbox/agent` on a user's turn (docs/guide/sandbox.md): unless the prompt scripts its own tool
 * calls or the request forbids tools, it calls the first tool offered (or the one `tool_choice`
 * names) instead of echoing; the tool's output, when it comes back, is echoed as text.
 */
function actAsAgent(script: SandboxScript, tools: LanguageModelV4FunctionTool[], choice: LanguageModelV4CallOptions['toolChoice']): void {
  if (script.tools.length > 0 || choice?.type === 'none') return
  const offered = choice?.type === 'tool' ? tools.filter((t) => t.name === choice.toolName) : tools
  const move = agentMove(offered)
  if (move === null) return
  if (move.kind === 'call') {
    script.tools = [{ name: move.name, args: move.args }]
    script.text = ''
  } else script.text = `sandbox/agent cannot make arguments for ${move.name} that its schema takes: ${move.reason}`
}

/**
 * The offline model of docs/guide/sandbox.md, behind the same AI SDK interface as every vendor. It answers
 * deterministically, steered by magic lines of the newest prompt.
 */
export function createSandboxLanguageModel(modelId: string, limits?: SandboxLimits): LanguageModelV4 {
  // Per model, as a vendor's cache is: a chat that changes model starts cold.
  const prefixCache = createSandboxPrefixCache()
  return {
    specificationVersion: 'v4',
    provider: 'sandbox',
    modelId,
    supportedUrls: {},
    async doGenerate() {
      throw new Error('the sandbox model only streams')
    },
    async doStream(options: LanguageModelV4CallOptions) {
      // The sandbox is this call's vendor: it counts as a request sent (src/providers/vendor-call-record.ts).
      const vendorCall = currentVendorCall()
      if (vendorCall) vendorCall.requests += 1
      // Over its window the request is refused before anything streams, compaction runs included
      // (decision 043), as a vendor refuses it: never a silently longer context than the model has.
      if (limits) {
        const tools = (options.tools ?? []).filter((t): t is LanguageModelV4FunctionTool => t.type === 'function')
        const refusal = contextRefusal(modelId, limits, estimatePromptTokens(options.prompt, tools), options.maxOutputTokens ?? 0)
        if (refusal) throw refusal
      }
      // A compaction run (src/actors/summarise-block.ts) is answered with the block's summary.
      const compaction = (options.providerOptions?.sandbox as { compaction?: SandboxCompaction } | undefined)?.compaction
      if (compaction) return sandboxSummaryCall(modelId, options, compaction)
      const turn = newestTurn(options.prompt)
      const script = turn.kind === 'prompt' ? readSandboxScript(turn.text) : readSandboxScript('')
      const sandboxOptions = options.providerOptions?.sandbox as SandboxCallOptions | undefined
      const retry = sandboxOptions?.retry === true
      if (script.fail) throw failure(modelId, 'sandbox: scripted provider failure (/fail)')
      if (script.flaky && !retry) throw failure(modelId, 'sandbox: scripted provider failure (/flaky: a retry of this run succeeds)')

      const tools = (options.tools ?? []).filter((t): t is LanguageModelV4FunctionTool => t.type === 'function')
      if (modelId === AGENT_MODEL && turn.kind === 'prompt') actAsAgent(script, tools, options.toolChoice)
      // Counted item by item, in one pass, so the cached share is a leading run of the same counts
      // whose sum is estimatePromptTokens (docs/guide/sandbox.md). A request failed before its first byte
      // (above) never reached the cache.
      const items = prefixItems(options.prompt, tools)
      let inputTokens = 0
      for (const item of items) inputTokens = saturatingAdd(inputTokens, item.tokens)
      const cacheKey = typeof sandboxOptions?.cacheKey === 'string' ? sandboxOptions.cacheKey : undefined
      const cacheReadTokens = prefixCache.measure(cacheKey, items)
      const maxTokens = options.maxOutputTokens ?? Number.MAX_SAFE_INTEGER
      const signal = options.abortSignal
      const responseId = `sandbox-${randomUUID()}`

      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async start(controller) {
          let output = ''
          let reasoning = ''
          let spent = 0
          let finish: LanguageModelV4FinishReason = { unified: 'stop', raw: 'end_turn' }
          // Deltas go out in slices, the event loop turning over between them (issue 22): a
          // `/long 40000` or a long echo must not hold every other request until it is all queued.
          const pace = createIoPacer()
          const emit = async (part: LanguageModelV4StreamPart, delay = false) => {
            if (delay && script.slowMs > 0) await sleep(script.slowMs, signal)
            else await pace()
            if (!signal?.aborted) controller.enqueue(part)
          }
          controller.enqueue({ type: 'stream-start', warnings: [] })
          controller.enqueue({ type: 'response-metadata', id: responseId, modelId, timestamp: new Date(0) })

          for (const thought of script.think) {
            const id = randomUUID()
            await emit({ type: 'reasoning-start', id })
            for (const delta of wordDeltas(thought)) {
              reasoning += delta
              spent += estimateTokens(delta)
              await emit({ type: 'reasoning-delta', id, delta }, true)
            }
            await emit({ type: 'reasoning-end', id })
          }

          if (script.refuse) {
            const id = randomUUID()
            const refusal = 'I cannot help with that request.'
            await emit({ type: 'text-start', id, providerMetadata: { sandbox: { refusal: true } } })
            for (const delta of wordDeltas(refusal)) {
              output += delta
              await emit({ type: 'text-delta', id, delta }, true)
            }
            await emit({ type: 'text-end', id })
            finish = { unified: 'content-filter', raw: 'refusal' }
          } else {
            const id = randomUUID()
            const deltas = textDeltas(turn, script, () => describeContext(options.prompt, tools))
            if (deltas.length > 0) {
              await emit({ type: 'text-start', id })
              for (const [i, delta] of deltas.entries()) {
                // Per-delta counts keep this linear; usage below re-counts the whole text.
                spent += estimateTokens(delta)
                // The /context answer is for reading what packing sent: never cut.
                if (spent > maxTokens && !script.context) {
                  // Counted word by word the answer runs high (a word alone is often more tokens than
                  // within its text): count it as usage will before cutting it. Each recount narrows the
                  // gap, so only a few happen near the limit.
                  spent = saturatingAdd(estimateTokens(reasoning), estimateTokens(output + delta))
                  if (spent > maxTokens) {
                    finish = { unified: 'length', raw: 'max_tokens' }
                    break
                  }
                }
                output += delta
                await emit({ type: 'text-delta', id, delta }, true)
                if (script.failMid && i === Math.min(2, deltas.length - 1)) {
                  controller.enqueue({ type: 'error', error: failure(modelId, 'sandbox: scripted failure mid-stream (/fail-mid)') })
                  controller.close()
                  return
                }
              }
              await emit({ type: 'text-end', id })
            }
            if (finish.unified !== 'length') {
              for (const tool of script.tools) {
                const id = `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`
                await emit({ type: 'tool-input-start', id, toolName: tool.name })
                const half = Math.ceil(tool.args.length / 2)
                for (const delta of [tool.args.slice(0, half), tool.args.slice(half)].filter(Boolean)) {
                  output += delta
                  await emit({ type: 'tool-input-delta', id, delta }, true)
                }
                await emit({ type: 'tool-input-end', id })
                await emit({ type: 'tool-call', toolCallId: id, toolName: tool.name, input: tool.args })
                finish = { unified: 'tool-calls', raw: 'tool_use' }
              }
            }
          }
          if (signal?.aborted) return controller.close()
          const reasoningTokens = estimateTokens(reasoning)
          const outputTokens = estimateTokens(output) + reasoningTokens
          controller.enqueue({
            type: 'finish',
            finishReason: finish,
            usage: {
              inputTokens: { total: inputTokens, noCache: inputTokens - cacheReadTokens, cacheRead: cacheReadTokens, cacheWrite: 0 },
              outputTokens: { total: outputTokens, text: outputTokens - reasoningTokens, reasoning: reasoningTokens },
            },
          })
          controller.close()
        },
      })
      return { stream, response: { headers: {} } }
    },
  }
}
