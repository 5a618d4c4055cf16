import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { WebSocket } from 'undici'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, waitFor, type ServerProcess } from './server-process.ts'
import { moneyUnits, postTurn, readDatabase, request, type TurnStream } from './turn-client.ts'
import { machineCeiling, machineTimeout } from '../helpers/machine-timeouts.ts'

/**
 * Issue 12, decision 020: a chat deleted while its run streams, over the real server process.
 * Before, the stream broke with `upstream_error: the provider stream broke: FOREIGN KEY constraint
 * failed` and a retry hint, and the actor and its kept history stayed in memory. Now the stream ends
 * with `error` `chat_deleted`, the run is settled (cancelled) and billed once for what it used, the
 * chat's id answers 404 for good, and the memory the chat held comes back.
 *
 * The server runs with `--inspect` on a free port; the test reads the process's memory through the
 * DevTools protocol (a garbage collection, then `process.memoryUsage()`), and looks in a heap
 * snapshot for XState's actors, so "the actor is gone" is seen in the process itself.
 */

const MiB = 1024 * 1024
const IMAGE_BYTES = 16 * MiB

/** A real PNG (64×48 greyscale) padded with an ancillary chunk to exactly `size` bytes. */
function pngOfSize(size: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    return c >>> 0
  })
  const crc32 = (buffer: Buffer) => {
    let c = -1
    for (let i = 0; i < buffer.length; i++) c = crcTable[(c ^ buffer[i]!) & 0xff]! ^ (c >>> 8)
    return (c ^ -1) >>> 0
  }
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8)
    head.writeUInt32BE(data.length, 0)
    head.write(type, 4, 'latin1')
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
    return Buffer.concat([head, data, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(64, 0)
  ihdr.writeUInt32BE(48, 4)
  ihdr[8] = 8
  const raw = Buffer.alloc(65 * 48)
  for (let y = 0; y < 48; y++) for (let x = 0; x < 64; x++) raw[y * 65 + 1 + x] = (x * 4 + y) & 0xff
  const head = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw))])
  const end = chunk('IEND', Buffer.alloc(0))
  const filler = Buffer.alloc(size - head.length - end.length - 12, Buffer.from(Array.from({ length: 251 }, (_, i) => (i * 31) & 0xff)))
  return Buffer.concat([head, chunk('paDd', filler), end])
}

/** A DevTools protocol session with the server process (started with --inspect). */
async function devtools(server: ServerProcess) {
  const url = await waitFor('the inspector to listen', () => /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1], machineTimeout(15_000))
  const socket = new WebSocket(url)
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true })
    socket.addEventListener('error', () => reject(new Error(`no inspector at ${url}`)), { once: true })
  })
  let nextId = 0
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  const listeners = new Set<(message: { method: string; params: any }) => void>()
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data))
    if (message.id !== undefined) {
      const call = pending.get(message.id)
      pending.delete(message.id)
      if (message.error) call?.reject(new Error(message.error.message))
      else call?.resolve(message.result)
    } else for (const listener of listeners) listener(message)
  })
  const send = (method: string, params: Record<string, unknown> = {}): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = ++nextId
      pending.set(id, { resolve, reject })
      socket.send(JSON.stringify({ id, method, params }))
    })

  return {
    /** Collects garbage, then reads `process.memoryUsage()` in the server. */
    async memory(): Promise<{ heapUsed: number; external: number; arrayBuffers: number; held: number }> {
      await send('HeapProfiler.collectGarbage')
      await send('HeapProfiler.collectGarbage')
      const { result } = await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true })
      const usage = JSON.parse(result.value)
      // What the process's objects hold: its JavaScript heap and the buffers outside it.
      return { ...usage, held: usage.heapUsed + usage.external }
    },
    /** How many objects of class `name` the server's heap holds after a collection (from a heap snapshot). */
    async heapCount(name: string): Promise<number> {
      await send('HeapProfiler.collectGarbage')
      const chunks: string[] = []
      const onChunk = (message: { method: string; params: any }) => {
        if (message.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(message.params.chunk)
      }
      listeners.add(onChunk)
      try {
        await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false })
      } finally {
        listeners.delete(onChunk)
      }
      const snapshot = JSON.parse(chunks.join(''))
      const fields: string[] = snapshot.snapshot.meta.node_fields
      const types: string[] = snapshot.snapshot.meta.node_types[0]
      const typeAt = fields.indexOf('type')
      const nameAt = fields.indexOf('name')
      const nodes: number[] = snapshot.nodes
      const strings: string[] = snapshot.strings
      let found = 0
      for (let i = 0; i < nodes.length; i += fields.length) {
        if (types[nodes[i + typeAt]!] === 'object' && strings[nodes[i + nameAt]!] === name) found++
      }
      return found
    },
    close: () => socket.close(),
  }
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`

describe('DELETE of a chat while its run streams, over the real server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-delete-'))
  const dbFile = join(dataDir, 'parley.db')
  let server: ServerProcess
  let inspector: Awaited<ReturnType<typeof devtools>>
  let key = ''
  const api = (path: string, init: { method?: string; body?: unknown } = {}) => request(server.url, path, { key, ...init })

  beforeAll(async () => {
    server = await startServer({
      args: ['--inspect=127.0.0.1:0', 'src/main.ts'],
      env: { DATA_DIR: dataDir, NODE_ID: 'e2e-delete', SANDBOX: 'on' },
      timeoutMs: 25_000,
    })
    key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    inspector = await devtools(server)
  }, machineCeiling(40_000))

  afterAll(async () => {
    inspector?.close()
    await server?.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the stream ends with error chat_deleted; the run is settled and billed once; the id stays 404; the actor and the memory it held are gone', async () => {
    const created = await api('/api/v1/chats', { method: 'POST', body: { title: 'doomed' } })
    expect(created.status, created.text).toBe(201)
    const chatId: string = created.json().id
    const before = await inspector.memory()

    // The first turn leaves a 16 MiB image in the chat's ledger; the second replays it, so the chat's
    // actor and kept history hold it while that turn streams.
    const image = pngOfSize(IMAGE_BYTES)
    const first = await postTurn(server.url, key, chatId, {
      model: 'sandbox/echo',
      input: [{ type: 'prompt', text: 'keep this picture', media: [{ mime: 'image/png', data_base64: image.toString('base64'), filename: 'big.png' }] }],
    })
    if (!first.ok) throw new Error(`first turn: HTTP ${first.status} ${first.text}`)
    await first.frame('done', (f) => f.event === 'done', 30_000)
    const firstRunId: string = first.frames[0]!.data.run_id

    const second = await postTurn(server.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 150\n/long 400' }] }, 60_000)
    if (!second.ok) throw new Error(`second turn: HTTP ${second.status} ${second.text}`)
    const stream: TurnStream = second
    await stream.frame('a text delta', (f) => f.event === 'delta' && f.data.kind === 'text', 20_000)
    await stream.frame('a few more deltas', () => stream.frames.filter((f) => f.event === 'delta').length >= 4, 20_000)
    const runId: string = stream.frames[0]!.data.run_id
    const during = await inspector.memory()
    // XState's actor class: the chat's actor and the provider call it invoked, at least (no other chat has one).
    const actorsDuring = await inspector.heapCount('Actor')
    expect(actorsDuring).toBeGreaterThanOrEqual(2)

    // Mid-stream: the chat goes.
    const deleted = await api(`/api/v1/chats/${chatId}`, { method: 'DELETE' })
    expect(deleted.status, deleted.text).toBe(204)

    // The stream ends with a clear error: not upstream_error, no retry hint.
    expect(await stream.closed).toBe('end')
    const last = stream.frames.at(-1)!
    expect(last.event).toBe('error')
    expect(last.data).toEqual({ code: 'chat_deleted', message: 'the chat was deleted while this run streamed', details: { run_id: runId } })
    expect(stream.frames.filter((f) => f.event === 'error' || f.event === 'done')).toHaveLength(1)
    const streamedText = stream.frames.filter((f) => f.event === 'delta').map((f) => f.data.text as string).join('')
    expect(streamedText.length).toBeGreaterThan(0)

    // Settled and billed once, for what it used; the first run's bill is untouched.
    const run = await api(`/api/v1/runs/${runId}`)
    expect(run.status, run.text).toBe(200)
    const inspection = run.json()
    expect(inspection).toMatchObject({ status: 'cancelled', is_live: false, error: 'the chat was deleted while this run streamed', usage: null })
    expect(inspection.settled_at).not.toBeNull()
    expect(moneyUnits(inspection.cost)).toBeGreaterThan(0n)
    const billing = readDatabase(dbFile, (db) => ({
      entries: db.prepare('SELECT run_id, entry_type, amount_units FROM balance_entries WHERE run_id IN (?, ?)').safeIntegers(true).all(runId, firstRunId) as {
        run_id: string
        entry_type: string
        amount_units: bigint
      }[],
      chats: db.prepare('SELECT COUNT(*) FROM chats WHERE id = ?').pluck().get(chatId),
      parts: db.prepare('SELECT COUNT(*) FROM parts WHERE chat_id = ?').pluck().get(chatId),
      running: db.prepare(`SELECT COUNT(*) FROM runs WHERE status = 'running'`).pluck().get(),
    }))
    const ofRun = billing.entries.filter((e) => e.run_id === runId)
    expect(ofRun).toHaveLength(1)
    expect(ofRun[0]!.entry_type).toBe('usage')
    expect(-ofRun[0]!.amount_units).toBe(moneyUnits(inspection.cost))
    expect(billing.entries.filter((e) => e.run_id === firstRunId)).toHaveLength(1)
    expect(billing).toMatchObject({ chats: 0, parts: 0, running: 0 })

    // The id is gone for good: every route answers 404, a repeat too; no request can name an id for a new chat.
    expect((await api(`/api/v1/chats/${chatId}`)).status).toBe(404)
    expect((await api(`/api/v1/chats/${chatId}/history`)).status).toBe(404)
    const again = await postTurn(server.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'anyone there?' }] })
    expect(again.ok).toBe(false)
    if (!again.ok) expect(again.status).toBe(404)
    const repeat = await api(`/api/v1/chats/${chatId}`, { method: 'DELETE' })
    expect(repeat.status).toBe(404)
    expect(repeat.json().error.code).toBe('not_found')
    const naming = await api('/api/v1/chats', { method: 'POST', body: { id: chatId } })
    expect(naming.status).toBe(422)
    const fresh = await api('/api/v1/chats', { method: 'POST', body: {} })
    expect(fresh.status).toBe(201)
    expect(fresh.json().id).not.toBe(chatId)

    // The actor is gone from the process, and the memory the chat held with it.
    const actorsAfter = await inspector.heapCount('Actor')
    expect(actorsAfter).toBe(0)
    const after = await inspector.memory()
    console.log(
      `delete mid-stream: held ${mib(before.held)} before the chat's turns, ${mib(during.held)} while its run streamed (${mib(during.held - before.held)} more), ` +
        `${mib(after.held)} after the DELETE (${mib(after.held - before.held)} over the start); arrayBuffers ${mib(before.arrayBuffers)} → ${mib(during.arrayBuffers)} → ${mib(after.arrayBuffers)}; ` +
        `XState actors in the heap ${actorsDuring} → ${actorsAfter}`,
    )
    expect(during.held - before.held).toBeGreaterThan(IMAGE_BYTES * 0.9)
    expect(after.held - before.held).toBeLessThan(4 * MiB)
    expect(during.held - after.held).toBeGreaterThan(IMAGE_BYTES * 0.9)
  }, 120_000)
})
