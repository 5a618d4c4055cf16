import { blockKey } from '../domain/context/cut-blocks.ts'
import type { BlockSummary } from '../domain/context/render-summary.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { RunDeps } from './run-deps.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import { summariseBlock } from './summarise-block.ts'

/** What a request for summaries came to. */
export type CompactionOutcome = {
  summaries: BlockSummary[]
  /** Blocks left without a summary: their compaction run failed or was cancelled (docs/guide/context.md). */
  failed: BlockToSummarise[]
  /** Blocks this request summarised itself, and those it waited for other work to summarise. */
  generated: string[]
  elsewhere: string[]
}

/** How many compaction runs one request keeps going at once. */
const PARALLEL_RUNS = 2

/** The blocks of one chat being summarised now, by block key: kept by the chat's runtime (src/actors/chat-runtime.ts). */
export type CompactionsInFlight = Map<string, Promise<BlockSummary | null>>

/** What the compactor keeps of a chat, in the chat's runtime (src/actors/chat-runtime.ts). */
export type CompactionMemory = { compactions: CompactionsInFlight; released: Set<string> }

/**
 * Compaction work of this node. A block being summarised is claimed, in its chat's map
 * (`memoryOf`, the chat's runtime owns it: issue 25), before its run starts; a request that needs
 * it meanwhile (a turn arriving during eager compaction) waits for that work instead of doing it
 * twice (docs/guide/context.md `in_progress_elsewhere`).
 */
export function createCompactor(deps: RunDeps, memoryOf: (chatId: string) => CompactionMemory) {
  const inFlightOf = (chatId: string) => memoryOf(chatId).compactions
  const keyOf = (block: BlockToSummarise) => blockKey(block)

  const untilAborted = <T>(promise: Promise<T>, signal: AbortSignal, fallback: T) =>
    signal.aborted
      ? Promise.resolve(fallback)
      : new Promise<T>((resolve) => {
          const stop = () => resolve(fallback)
          signal.addEventListener('abort', stop, { once: true })
          void promise.then(resolve, () => resolve(fallback)).finally(() => signal.removeEventListener('abort', stop))
        })

  return {
    /** How many of `blocks` other work of this node is summarising now. */
    inProgress(chatId: string, blocks: readonly BlockToSummarise[]): number {
      const inFlight = inFlightOf(chatId)
      return blocks.filter((b) => inFlight.has(keyOf(b))).length
    },

    /** Whether any compaction of the chat is running on this node. */
    busy(chatId: string): boolean {
      return inFlightOf(chatId).size > 0
    },

    /**
     * Summarises `blocks` (oldest first), waiting for those already being made; merges once the
     * blocks they merge are summarised (one that lacks a summary then fails). A cancel (`signal`)
     * stops this request's runs (each settles as cancelled) and stops waiting; what was made stays.
     */
    async summarise(job: CompactionJob, blocks: readonly BlockToSummarise[], signal: AbortSignal): Promise<CompactionOutcome> {
      const waits: { block: BlockToSummarise; result: Promise<BlockSummary | null> }[] = []
      const mine: { block: BlockToSummarise; resolve: (s: BlockSummary | null) => void; result: Promise<BlockSummary | null> }[] = []
      const inFlight = inFlightOf(job.chatId)
      // Blocks first: a merge reads the summaries of the blocks it merges.
      for (const block of [...blocks.filter((b) => b.kind === 'block'), ...blocks.filter((b) => b.kind === 'merge')]) {
        const key = keyOf(block)
        // Made by other work since the turn was packed (eager compaction that finished meanwhile):
        // taken as it is, never made and billed twice.
        const stored = deps.store.summaries.ofRange(job.chatId, block.firstOrdinal, block.lastOrdinal)
        const elsewhere = stored ? Promise.resolve(stored) : inFlight.get(key)
        if (elsewhere) {
          waits.push({ block, result: elsewhere })
          continue
        }
        let resolve!: (s: BlockSummary | null) => void
        const result = new Promise<BlockSummary | null>((r) => (resolve = r))
        inFlight.set(key, result)
        void result.finally(() => inFlight.delete(key))
        mine.push({ block, resolve, result })
      }

      let next = 0
      const worker = async () => {
        while (next < mine.length) {
          const claim = mine[next++]!
          if (signal.aborted) {
            claim.resolve(null)
            continue
          }
          try {
            if (claim.block.kind === 'merge') {
              const blocksOf = mine.filter((m) => m.block.kind === 'block').map((m) => m.result)
              await Promise.all([...blocksOf, ...waits.map((w) => untilAborted(w.result, signal, null))])
            }
            // A run left to the sweep is never renewed here again, like a customer run (decision 020).
            const summary = await summariseBlock(deps, job, claim.block, signal, (runId) => memoryOf(job.chatId).released.add(runId))
            if (summary) deps.history.addSummary(job.chatId, summary)
            claim.resolve(summary)
          } catch {
            claim.resolve(null)
          }
        }
      }
      await Promise.all(Array.from({ length: Math.min(PARALLEL_RUNS, mine.length) }, worker))
      const waited = await Promise.all(waits.map((w) => untilAborted(w.result, signal, null)))
      const made = await Promise.all(mine.map((m) => m.result))

      const outcome: CompactionOutcome = { summaries: [], failed: [], generated: [], elsewhere: [] }
      // Each block's summary, or the block as failed; `keys` names the blocks summarised (made here, or elsewhere).
      const collect = (of: readonly { block: BlockToSummarise }[], results: readonly (BlockSummary | null)[], keys: string[]) =>
        of.forEach(({ block }, i) => {
          const summary = results[i]
          if (!summary) {
            outcome.failed.push(block)
            return
          }
          outcome.summaries.push(summary)
          keys.push(blockKey(block))
        })
      collect(mine, made, outcome.generated)
      collect(waits, waited, outcome.elsewhere)
      return outcome
    },
  }
}

export type Compactor = ReturnType<typeof createCompactor>
