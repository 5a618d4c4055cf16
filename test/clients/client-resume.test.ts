import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { collectTurn, createParleyClient, ParleyApiError, unwrap, type ParleyClient, type TurnEvent } from '../../clients/typescript/src/index.ts'
import { startServer, type ServerProcess } from '../e2e/server-process.ts'

/**
 * The typed client's resume (decision 038) against the real server: `turns.resume(runId,
 * lastEventId)`, and turns that resume by themselves after a dropped connection. The drops are
 * real: a proxy in front of the server passes a stream's first frames, then destroys the
 * client's socket in the middle of the next one.
 */

const MODEL = 'sandbox/echo'
/** Twelve words, one delta each, 100 ms apart: the stream is still running when it is cut. */
const SLOW = '/slow 100\n/long 12'

type Proxy = { url: string; connections: { path: string; cut: boolean }[]; close: () => Promise<void> }

/**
 * Forwards to `target`; an event stream (turn or run events) is cut after `framesBeforeCut(n)` whole
 * frames for its n-th stream (0-based): the bytes up to the middle of the next frame go out, then
 * the socket is destroyed. `Infinity` passes a stream whole.
 */
async function cuttingProxy(target: string, framesBeforeCut: (n: number) => number): Promise<Proxy> {
  const connections: Proxy['connections'] = []
  const server: Server = createServer((req, res) => {
    const upstream = httpRequest(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers)
      const isStream = String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')
      if (!isStream) return answer.pipe(res)
      const record = { path: req.url!, cut: false }
      connections.push(record)
      const limit = framesBeforeCut(connections.length - 1)
      let seen = 0
      answer.on('data', (chunk: Buffer) => {
        if (record.cut) return
        const text = chunk.toString('utf8')
        let at = 0
        for (;;) {
          const end = text.indexOf('\n\n', at)
          if (end < 0) break
          if (!text.slice(at, end).startsWith(':')) seen++
          at = end + 2
          if (seen === limit) {
            // Half of the next frame, then the connection breaks.
            record.cut = true
            answer.destroy()
            // Destroyed once these bytes are out, so the client has them and then a broken connection.
            res.write(text.slice(0, at) + text.slice(at, at + Math.ceil((text.length - at) / 2)), () => res.socket?.destroy())
            return
          }
        }
        res.write(chunk)
      })
      answer.on('end', () => res.end())
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const seqOf = (e: TurnEvent) => Number(e.id!.slice(e.id!.lastIndexOf(':') + 1))

describe('the TypeScript client resumes a run’s stream (real server, real dropped connections)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-client-resume-'))
  let server: ServerProcess | undefined
  let parley: ParleyClient
  let apiKey = ''
  const proxies: Proxy[] = []

  const newChat = async (client = parley) => unwrap(await client.api.POST('/api/v1/chats', { body: { title: 'resume' } })).id
  const prompt = (text: string) => ({ type: 'prompt' as const, text })
  const through = async (framesBeforeCut: (n: number) => number) => {
    const proxy = await cuttingProxy(server!.url, framesBeforeCut)
    proxies.push(proxy)
    return { proxy, client: createParleyClient({ baseUrl: proxy.url, apiKey, resend: { pollMs: 20 } }) }
  }
  /** The text of each block, as a client assembles it from deltas. */
  const texts = (events: TurnEvent[]) => {
    const out: string[] = []
    for (const e of events) {
      if (e.event === 'block_start') out.push('')
      if (e.event === 'delta') out[out.length - 1] += e.data.text
    }
    return out
  }
  const persistedTexts = async (chatId: string) => {
    const history = unwrap(await parley.api.GET('/api/v1/chats/{chat_id}/history', { params: { path: { chat_id: chatId } } }))
    return history.data.flatMap((p) => (p.part.type === 'message' || p.part.type === 'reasoning' ? [p.part.text] : []))
  }
  const expectOnceInOrder = (events: TurnEvent[]) => {
    expect(events.every((e) => e.id !== undefined)).toBe(true)
    const seqs = events.map(seqOf)
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b))
  }

  beforeAll(async () => {
    server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'client-resume' }, timeoutMs: 25_000 })
    apiKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    parley = createParleyClient({ baseUrl: server.url, apiKey })
  })

  afterAll(async () => {
    for (const proxy of proxies) await proxy.close()
    await server?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('resume(runId, lastEventId) after a dropped turn gives every remaining event once and in order, to done; resume(runId) of the finished run gives all of it, rebuilt', async () => {
    const chatId = await newChat()
    const turn = await parley.turns.submit(chatId, { model: MODEL, input: [prompt(SLOW)] })
    const first: TurnEvent[] = []
    for await (const event of turn) {
      first.push(event)
      // Leaving the loop drops the connection; the run goes on.
      if (first.filter((e) => e.event === 'delta').length === 3) break
    }
    const runId = first[0]!.event === 'run' ? first[0]!.data.run_id : ''
    expect(first.at(-1)!.id).toMatch(new RegExp(`^${runId}:\\d+$`))

    const rest: TurnEvent[] = []
    for await (const event of await parley.turns.resume(runId, first.at(-1)!.id)) rest.push(event)
    expect(rest.at(-1)!.event).toBe('done')
    const all = [...first, ...rest]
    expectOnceInOrder(all)
    expect(texts(all)).toEqual(await persistedTexts(chatId))

    // From the start, once the run has ended: rebuilt from the ledger, so collectTurn reads it as a turn.
    const replay = await collectTurn(await parley.turns.resume(runId))
    expect(replay.runId).toBe(runId)
    expect(replay.blocks.map((b) => (b.kind === 'tool_call' ? '' : b.text))).toEqual(texts(all))
    const done = rest.at(-1)!
    expect(replay.done.usage).toEqual(done.event === 'done' ? done.data.usage : null)

    // Another run's id is refused, as the server refuses it; a run of no one is 404.
    await expect(parley.turns.resume(runId, 'another-run:3')).rejects.toMatchObject({ status: 422, code: 'validation_failed' })
    await expect(parley.turns.resume(crypto.randomUUID())).rejects.toBeInstanceOf(ParleyApiError)
  })

  test('a turn asked to resume survives its connection dropping twice: every event once, in order, ending with done; without asking, the drop is the caller’s', async () => {
    // The turn's stream is cut after 6 frames, the first resumed stream after 2, the second passes whole.
    const { proxy, client } = await through((n) => [6, 2][n] ?? Infinity)
    const chatId = await newChat(client)
    const events: TurnEvent[] = []
    for await (const event of await client.turns.submit(chatId, { model: MODEL, input: [prompt(SLOW)] }, { resume: 3 })) events.push(event)
    expect(proxy.connections.map((c) => c.cut)).toEqual([true, true, false])
    expect(proxy.connections.slice(1).every((c) => c.path.includes('/events'))).toBe(true)
    expect(events[0]!.event).toBe('run')
    expect(events.at(-1)!.event).toBe('done')
    expectOnceInOrder(events)
    expect(texts(events)).toEqual(await persistedTexts(chatId))
    expect(texts(events).join('').split(' ').length).toBeGreaterThanOrEqual(12)

    // The same cut without `resume`: the iteration fails with the dropped connection.
    const plain = await through(() => 6)
    const dropped = await collectTurn(await plain.client.turns.submit(await newChat(plain.client), { model: MODEL, input: [prompt(SLOW)] })).catch((e: unknown) => e)
    expect(dropped).toBeInstanceOf(TypeError)
    expect(plain.proxy.connections).toHaveLength(1)
  })

  test('resuming is bounded: a stream that keeps dropping is reopened `resume` times, then the drop is thrown', async () => {
    const { proxy, client } = await through(() => 3)
    const chatId = await newChat(client)
    const events: TurnEvent[] = []
    const outcome = await (async () => {
      for await (const event of await client.turns.submit(chatId, { model: MODEL, input: [prompt(SLOW)] }, { resume: 2 })) events.push(event)
    })().catch((e: unknown) => e)
    expect(outcome).toBeInstanceOf(TypeError)
    expect(proxy.connections).toHaveLength(3)
    expect(proxy.connections.every((c) => c.cut)).toBe(true)
    // What did arrive came once and in order.
    expectOnceInOrder(events)
    expect(events.length).toBeGreaterThanOrEqual(3)
  })
})
