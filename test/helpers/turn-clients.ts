/**
 * Many clients looping turns over their own keep-alive connections against a server process: how
 * long each client's first turn waited for its first frame, or how it was refused. Shared by the
 * overload test (test/e2e/overload.test.ts) and bench/overload.ts.
 */
import { Agent, request } from 'node:http'

export type FirstTurn =
  | { kind: 'streamed'; firstFrameMs: number; terminal: string | null }
  | { kind: 'refused'; status: number; retryAfter: string | null; code: string | null; ms: number }
  | { kind: 'failed'; message: string; ms: number }

export type ClientsRun = { firstTurns: Array<FirstTurn & { client: number; late: boolean }>; turns: number; refusals: number }

/** One turn over `agent`: resolves once its answer ends, with when its first frame came. */
export function oneTurn(agent: Agent, url: string, path: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<FirstTurn> {
  const target = new URL(url)
  const start = performance.now()
  return new Promise((resolve) => {
    const req = request(
      { agent, host: target.hostname, port: target.port, method: 'POST', path, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = ''
        let firstFrameMs: number | null = null
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          if (res.statusCode === 200 && firstFrameMs === null && chunk.includes('event:')) firstFrameMs = performance.now() - start
          text += chunk
        })
        res.once('end', () => {
          const ms = performance.now() - start
          if (res.statusCode === 200) {
            const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]!)
            resolve({ kind: 'streamed', firstFrameMs: firstFrameMs ?? ms, terminal: events.at(-1) ?? null })
          } else {
            let code: string | null = null
            try {
              code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null
            } catch {
              code = null
            }
            resolve({ kind: 'refused', status: res.statusCode ?? 0, retryAfter: (res.headers['retry-after'] as string | undefined) ?? null, code, ms })
          }
        })
        res.once('error', (error) => resolve({ kind: 'failed', message: error.message, ms: performance.now() - start }))
      },
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.once('error', (error) => resolve({ kind: 'failed', message: error.message, ms: performance.now() - start }))
    req.end(body)
  })
}

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

/** Each client opens its own keep-alive connection, turns once (measured), then loops until time is up. */
export async function runClients(o: ClientsOptions): Promise<ClientsRun> {
  const firstTurns: ClientsRun['firstTurns'] = []
  let turns = 0
  let refusals = 0
  const until = performance.now() + o.loopForMs
  const client = async (chatId: string, index: number, delayMs: number) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const path = `/api/v1/chats/${chatId}/responses`
    const first = await oneTurn(agent, o.url, path, o.auth, o.body, o.timeoutMs)
    firstTurns.push({ ...first, client: index, late: delayMs > 0 })
    while (performance.now() < until) {
      const next = await oneTurn(agent, o.url, path, o.auth, o.body, o.timeoutMs)
      turns++
      if (next.kind !== 'streamed') {
        refusals++
        // As a client should: wait what Retry-After asks.
        await new Promise((resolve) => setTimeout(resolve, next.kind === 'refused' && next.retryAfter ? Number(next.retryAfter) * 1000 : 100))
      }
    }
    agent.destroy()
  }
  await Promise.all(o.chats.map((chatId, i) => client(chatId, i, i < o.firstWave ? 0 : o.lateAfterMs)))
  return { firstTurns, turns: turns + firstTurns.length, refusals }
}
