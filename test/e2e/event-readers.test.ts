import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest, type ClientRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { seedOrganisation } from '../helpers/seed-organisation.ts'
import { defaultEventReaders, DEFAULT_MAX_CONCURRENT_TURNS } from '../../src/settings.ts'
import { startServer, type ServerProcess } from './server-process.ts'

/**
 * 10,000 readers of one running run against a server whose open-file limit is 5,000 (issue 36,
 * docs/decisions/062-bounded-event-readers.md). The run's and the key's bounds are raised here, so
 * that the node's own bound, derived from that limit, is what meets them: past it every reader gets
 * 503 with Retry-After and its connection closed, while /healthz answers every ping and a turn is
 * still admitted. Before the bound, 6,000 readers took such a node off the network.
 */
const OPEN_FILES = 5000
const READERS = 10_000
const AT_ONCE = 256
let dataDir: string
let server: ServerProcess
let auth: { authorization: string }
let chats: string[]

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'parley-readers-'))
  const seeded = seedOrganisation(dataDir, { name: 'Readers', credit: '1000', chats: 2 })
  auth = { authorization: `Bearer ${seeded.key}` }
  chats = seeded.chats
  server = await startServer({
    prefix: ['prlimit', `--nofile=${OPEN_FILES}:${OPEN_FILES}`],
    env: { DATA_DIR: dataDir, MAX_READERS_PER_RUN: '100000', MAX_READERS_PER_KEY: '100000' },
    readyPath: '/healthz',
  })
}, machineCeiling(60_000))

afterAll(async () => {
  await server?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Opens a turn's stream and returns its run id once the first frame came (the stream is left open, unread). */
async function startTurn(chatId: string, text: string): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/chats/${chatId}/responses`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text }] }),
  })
  expect(res.status).toBe(200)
  const first = new TextDecoder().decode((await res.body!.getReader().read()).value)
  return /"run_id":"([^"]+)"/.exec(first)![1]!
}

type Outcome = { status: number; reason?: string; retryAfter?: string; connection?: string }

describe(`${READERS} readers of one run, open-file limit ${OPEN_FILES}`, () => {
  it('past the node bound every reader gets 503 with Retry-After, /healthz answers throughout and a turn is still admitted', { timeout: machineCeiling(180_000) }, async () => {
    // 300 deltas a second apart: the run streams for the whole test, and each reader is sent little.
    const runId = await startTurn(chats[0]!, '/slow 1000\n' + 'word '.repeat(300))
    const held: ClientRequest[] = []
    const outcomes: Outcome[] = []
    const read = () =>
      new Promise<void>((resolve) => {
        const req = httpRequest({ host: '127.0.0.1', port: server.port, path: `/api/v1/runs/${runId}/events`, headers: auth, agent: false }, (res) => {
          if (res.statusCode === 200) {
            held.push(req)
            outcomes.push({ status: 200 })
            return resolve()
          }
          let body = ''
          res.setEncoding('utf8').on('data', (c: string) => (body += c))
          res.on('end', () => {
            let reason: string | undefined
            try {
              reason = JSON.parse(body).error?.details?.reason
            } catch {}
            outcomes.push({ status: res.statusCode!, reason, retryAfter: res.headers['retry-after'] as string | undefined, connection: res.headers.connection })
            resolve()
          })
        })
        req.on('error', (error) => {
          outcomes.push({ status: 0, reason: error.message })
          resolve()
        })
        req.end()
      })

    // /healthz every 100 ms on a fresh connection while the readers come and hold; each must answer 200.
    const pings: number[] = []
    let pinging = true
    const pinger = (async () => {
      while (pinging) {
        const status = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(machineCeiling(5_000)) }).then(
          (r) => r.status,
          () => 0,
        )
        pings.push(status)
        await new Promise((r) => setTimeout(r, 100))
      }
    })()

    let next = 0
    await Promise.all(
      Array.from({ length: AT_ONCE }, async () => {
        while (next < READERS) {
          next++
          await read()
        }
      }),
    )
    // Held readers in place: a turn is admitted beside them.
    const other = await startTurn(chats[1]!, 'still admitted')
    pinging = false
    await pinger

    const bound = defaultEventReaders(OPEN_FILES, DEFAULT_MAX_CONCURRENT_TURNS)
    const ok = outcomes.filter((o) => o.status === 200)
    const refused = outcomes.filter((o) => o.status !== 200)
    console.log(`[readers] ${READERS} readers: ${ok.length} held (bound ${bound}), ${refused.length} refused; ${pings.length} health pings, ${pings.filter((p) => p !== 200).length} failed`)
    expect(outcomes).toHaveLength(READERS)
    expect(ok).toHaveLength(bound)
    for (const o of refused) {
      expect(o).toMatchObject({ status: 503, reason: 'event_readers', connection: 'close' })
      expect(Number(o.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    expect(pings.length).toBeGreaterThan(0)
    expect(pings.filter((p) => p !== 200)).toEqual([])
    expect(other).toMatch(/^[0-9a-f-]{36}$/)
    for (const req of held) req.destroy()
  })
})
