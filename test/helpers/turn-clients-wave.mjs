// One wave of turn clients (test/helpers/turn-clients.ts), on a thread of its own: plain
// JavaScript, so the thread needs no loader. A wave's own work (reading its streams) then cannot
// delay another wave's connections, as it would on one shared event loop: real clients are
// separate machines.
import { parentPort, workerData } from 'node:worker_threads'
import { Agent, request } from 'node:http'

const now = () => performance.timeOrigin + performance.now()

/** One turn over `agent`: resolves once its answer ends, with when its first frame came. */
function oneTurn(agent, url, path, headers, body, timeoutMs) {
  const target = new URL(url)
  const start = performance.now()
  return new Promise((resolve) => {
    const req = request(
      { agent, host: target.hostname, port: target.port, method: 'POST', path, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = ''
        let firstFrameMs = null
        res.setEncoding('utf8')
        res.on('data', (chunk) => {
          if (res.statusCode === 200 && firstFrameMs === null && chunk.includes('event:')) firstFrameMs = performance.now() - start
          text += chunk
        })
        res.once('end', () => {
          const ms = performance.now() - start
          if (res.statusCode === 200) {
            const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])
            resolve({ kind: 'streamed', firstFrameMs: firstFrameMs ?? ms, terminal: events.at(-1) ?? null })
          } else {
            let code = null
            try {
              code = JSON.parse(text).error?.code ?? null
            } catch {
              code = null
            }
            resolve({ kind: 'refused', status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] ?? null, code, ms })
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

const { url, auth, chats, firstIndex, startAt, untilAt, body, timeoutMs } = workerData
const firstTurns = []
let turns = 0
let refusals = 0

async function client(chatId, index) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const path = `/api/v1/chats/${chatId}/responses`
  const first = await oneTurn(agent, url, path, auth, body, timeoutMs)
  firstTurns.push({ ...first, client: index })
  while (now() < untilAt) {
    const next = await oneTurn(agent, url, path, auth, body, timeoutMs)
    turns++
    if (next.kind !== 'streamed') {
      refusals++
      // As a client should: wait what Retry-After asks.
      await new Promise((resolve) => setTimeout(resolve, next.kind === 'refused' && next.retryAfter ? Number(next.retryAfter) * 1000 : 100))
    }
  }
  agent.destroy()
}

const wait = startAt - now()
if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
await Promise.all(chats.map((chatId, i) => client(chatId, firstIndex + i)))
parentPort.postMessage({ firstTurns, turns, refusals })
