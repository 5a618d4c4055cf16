import { estimateTokens } from '../domain/tokens/estimate-tokens.ts'
import type { PartBody } from '../domain/parts.ts'
import type { RunDeps } from './run-deps.ts'
import { settleRun } from './settle-run.ts'

/**
 * decisions §4: a `running` run whose lease expired (or that this node's previous life held) can
 * have nobody streaming it. It becomes `failed` with error `interrupted` and is settled for the
 * usage known: the packed input recorded in its manifest and the output it had written.
 */
export function sweepAbandonedRuns(deps: RunDeps, previousSelf: string | null): number {
  const abandoned = deps.store.runs.abandoned(deps.now().toISOString(), previousSelf ?? '')
  for (const run of abandoned) {
    const manifest = JSON.parse(run.manifest) as { estimated_input_tokens?: number; markup_percent?: string }
    const model = deps.modelById(run.model_id)
    const output = deps.store.parts
      .ofRun(run.id)
      .map((row) => JSON.parse(row.body) as PartBody)
      .map((body) => (body.type === 'tool_call' ? body.arguments : body.type === 'message' || body.type === 'reasoning' ? body.text : ''))
      .join('')
    settleRun(deps, {
      runId: run.id,
      orgId: run.org_id,
      chatId: run.chat_id,
      apiKeyId: run.api_key_id,
      namespace: run.namespace,
      // A model no longer in the catalogue settles at zero rather than at a guessed price.
      model: model ?? { id: run.model_id, name: run.model_name, rates: { input: '0', output: '0', currency: 'USD' }, tiers: [] },
      markupPercent: manifest.markup_percent ?? '5',
      status: 'failed',
      stopReason: null,
      error: 'interrupted',
      usage: {
        input_tokens: manifest.estimated_input_tokens ?? 0,
        output_tokens: estimateTokens(output),
        reasoning_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
      },
      latencyMs: null,
      providerResponseId: null,
      entryType: run.origin === 'compaction' ? 'compaction' : 'usage',
    })
  }
  return abandoned.length
}
