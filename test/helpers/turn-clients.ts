/**
 * Many clients looping turns over their own keep-alive connections against a server process: how
 * long each client's first turn waited for its first frame, or how it was refused. Each wave of
 * clients runs on its own thread (turn-clients-wave.mjs). Used by the overload test
 * (test/e2e/overload.test.ts).
 */
import { Worker } from 'node:worker_threads'

export type FirstTurn =
  | { kind: 'streamed'; firstFrameMs: number; terminal: string | null }
  | { kind: 'refused'; status: number; retryAfter: string | null; code: string | null; ms: number }
  | { kind: 'failed'; message: string; ms: number }

export type ClientsRun = { firstTurns: Array<FirstTurn & { client: number; late: boolean }>; turns: number; refusals: number }

export type ClientsOptions = {
  url: string
  auth: Record<string, string>
  /** One chat per client. */
  chats: readonly string[]
  /** Clients that start at once, then the rest `lateAfterMs` later, while the first ones stream. */
  firstWave: number
  lateAfterMs: number
  /** How long each client keeps looping turns after its first. */
  loopForMs: number
  body: string
  timeoutMs: number
}

type WaveResult = { firstTurns: Array<FirstTurn & { client: number }>; turns: number; refusals: number }

function wave(o: ClientsOptions, chats: readonly string[], firstIndex: number, startAt: number, untilAt: number): Promise<WaveResult> {
  const worker = new Worker(new URL('./turn-clients-wave.mjs', import.meta.url), {
    workerData: { url: o.url, auth: o.auth, chats, firstIndex, startAt, untilAt, body: o.body, timeoutMs: o.timeoutMs },
  })
  return new Promise((resolve, reject) => {
    worker.once('message', (result: WaveResult) => {
      resolve(result)
      void worker.terminate()
    })
    worker.once('error', reject)
  })
}

/** Each client opens its own keep-alive connection, turns once (measured), then loops until time is up. */
export async function runClients(o: ClientsOptions): Promise<ClientsRun> {
  const now = performance.timeOrigin + performance.now()
  // Both threads start from one clock reading, whatever either takes to boot.
  const startAt = now + 200
  const untilAt = startAt + o.loopForMs
  const [early, late] = await Promise.all([
    wave(o, o.chats.slice(0, o.firstWave), 0, startAt, untilAt),
    wave(o, o.chats.slice(o.firstWave), o.firstWave, startAt + o.lateAfterMs, untilAt),
  ])
  return {
    firstTurns: [...early.firstTurns.map((t) => ({ ...t, late: false })), ...late.firstTurns.map((t) => ({ ...t, late: true }))],
    turns: early.turns + late.turns + early.firstTurns.length + late.firstTurns.length,
    refusals: early.refusals + late.refusals,
  }
}
