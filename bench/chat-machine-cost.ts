/**
 * What the chat machine alone costs a turn: 32 actors of machines/chat.machine.ts looping turns in
 * this process, with admitTurn / streamRun / settleRun provided as promises that resolve at once
 * (no SQLite, no HTTP, no provider). Not part of `npm run bench`; a note for BENCHMARKS.md.
 *   node --import tsx bench/chat-machine-cost.ts [turns]
 */
import { createActor, fromPromise, waitFor } from 'xstate'
import { chatMachine } from '../machines/chat.machine.ts'
import type { SettledRun } from '../machines/run-settlement.machine.ts'
import type { RunAdmission } from '../machines/chat.types.ts'
import type { Submission } from '../src/actors/turn-types.ts'
import type { RunOutcome } from '../src/domain/runs/run-outcome.ts'
import type { TurnFacts } from '../src/domain/turns/admission-rules.ts'

const TURNS = Number(process.argv[2] ?? 50_000)
const ACTORS = 32

const admission = (runId: string): RunAdmission => ({ runId, startedAtMs: Date.now(), createdAt: '', estimatedInputTokens: 1, compaction: null, refits: 0 })
const result: RunOutcome = {
  status: 'succeeded',
  stopReason: 'end_turn',
  error: null,
  usage: { input_tokens: 1, output_tokens: 1, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
  providerResponseId: null,
  modelServed: null,
  pendingToolCalls: [],
  latencyMs: 1,
  firstDeltaMs: 1,
  streamOpened: true,
  vendorRequests: 1,
  contextRefusal: null,
}
const machine = chatMachine.provide({
  actors: {
    readTurn: fromPromise(async (): Promise<TurnFacts> => ({ runningRuns: { count: 0, cap: 10 }, overflow: null, budget: null, unmetToolChoice: null })),
    writeTurn: fromPromise(async ({ input }) => admission(input.submission.runId)),
    streamRun: fromPromise(async () => result),
    settleRun: fromPromise(async (): Promise<SettledRun> => ({ cost: '0', eager: null })),
  },
})

const actors = Array.from({ length: ACTORS }, () => createActor(machine, { input: { chatId: 'chat', pendingCalls: [], latestCustomerRun: null } }).start())
let runs = 0
const prompt = { type: 'prompt', text: 'hello' }
async function loop(actor: (typeof actors)[number], turns: number) {
  for (let i = 0; i < turns; i++) {
    const submission = { runId: `run-${runs++}`, chatId: 'chat', request: { model: 'sandbox/echo', input: [prompt] }, input: [{ body: prompt }] }
    actor.send({ type: 'SUBMIT', requestId: submission.runId, submission: submission as unknown as Submission, at: new Date().toISOString() })
    await waitFor(actor, (s) => s.matches('idle'))
  }
}

await Promise.all(actors.map((a) => loop(a, 200))) // warm-up
const cpu = process.cpuUsage()
const start = performance.now()
await Promise.all(actors.map((a) => loop(a, Math.ceil(TURNS / ACTORS))))
const used = process.cpuUsage(cpu)
const turns = Math.ceil(TURNS / ACTORS) * ACTORS
console.log(
  `${turns} turns through ${ACTORS} chat machines: ${((used.user + used.system) / turns).toFixed(1)} µs of CPU and ` +
    `${(((performance.now() - start) * 1000) / turns).toFixed(1)} µs of wall time per turn`,
)
