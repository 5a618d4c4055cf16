import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type ServerProcess } from './server-process.ts'
import { readDatabase, request } from './turn-client.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { startReplayServer, type ReplayServer } from './vendor-replay-server.ts'

/**
 * Issue 11: attachments of 1, 4, 8 and 20 MiB on models whose catalogue entry takes them answer
 * 200, stream to `done` and read back byte for byte; one byte over the chosen model's
 * `max_bytes_per_attachment` answers 422 in the error envelope with a pointer and writes nothing.
 * The real server process; vendor models call a loopback replay server (test/e2e/vendors.test.ts).
 * The 20 MiB turn is timed, with GET /api/v1/version polled meanwhile to see whether the event
 * loop stalls; the figures are printed, not asserted (they depend on the machine).
 */

const MiB = 1024 * 1024
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const KEYS: Partial<Record<Vendor, string>> = { anthropic: 'sk-ant-api03-replay-anthropic-key', xai: 'xai-replay-key', openai: 'sk-proj-replay-openai-key' }
const KEY_VARIABLES: Partial<Record<Vendor, string>> = { anthropic: 'ANTHROPIC_API_KEY', xai: 'XAI_API_KEY', openai: 'OPENAI_API_KEY' }

// --- Real files of an exact byte length ---------------------------------------------------------

const CRC_TABLE = (() => {
  const table = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  return table
})()

function crc32(...buffers: Buffer[]): number {
  let c = -1
  for (const buffer of buffers) for (let i = 0; i < buffer.length; i++) c = CRC_TABLE[(c ^ buffer[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ -1) >>> 0
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(head.subarray(4), data), 0)
  return Buffer.concat([head, data, crc])
}

/**
 * A valid `width`×`height` greyscale PNG of exactly `size` bytes: signature, IHDR, IDAT, a private
 * ancillary chunk (`paDd`, which decoders skip) holding the padding, IEND; every CRC correct.
 */
function pngOfSize(size: number, width = 64, height = 48): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 0 // greyscale
  // Each scanline: filter byte 0, then a gradient.
  const raw = Buffer.alloc((width + 1) * height)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) raw[y * (width + 1) + 1 + x] = (x * 4 + y) & 0xff
  const head = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
  ])
  const end = pngChunk('IEND', Buffer.alloc(0))
  const padding = size - head.length - end.length - 12
  if (padding < 0) throw new Error(`a PNG cannot be as small as ${size} bytes`)
  // Not all one byte, so a truncation or shift in storage would show.
  const filler = Buffer.alloc(padding, Buffer.from(Array.from({ length: 251 }, (_, i) => (i * 31) & 0xff)))
  const png = Buffer.concat([head, pngChunk('paDd', filler), end])
  expect(png.length).toBe(size)
  return png
}

/**
 * A valid one-page PDF of exactly `size` bytes: catalog, pages, page, and an unreferenced stream
 * object holding the padding; a correct cross-reference table and startxref.
 */
function pdfOfSize(size: number): Buffer {
  const build = (padding: number): Buffer => {
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>',
    ]
    const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')]
    const offsets: number[] = []
    let at = parts[0]!.length
    const push = (b: Buffer) => {
      parts.push(b)
      at += b.length
    }
    objects.forEach((body, i) => {
      offsets.push(at)
      push(Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`, 'latin1'))
    })
    offsets.push(at)
    push(Buffer.from(`4 0 obj\n<< /Length ${padding} >>\nstream\n`, 'latin1'))
    push(Buffer.alloc(padding, 0x41))
    push(Buffer.from('\nendstream\nendobj\n', 'latin1'))
    const xrefAt = at
    const xref = ['xref', '0 5', '0000000000 65535 f ', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `)].join('\n')
    push(Buffer.from(`${xref}\ntrailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`, 'latin1'))
    return Buffer.concat(parts)
  }
  let padding = size - build(0).length
  for (let round = 0; round < 8; round++) {
    const pdf = build(padding)
    if (pdf.length === size) return pdf
    padding += size - pdf.length
  }
  throw new Error(`no PDF of exactly ${size} bytes`)
}

const fileOf = (mime: string, size: number) => (mime === 'application/pdf' ? pdfOfSize(size) : pngOfSize(size))

// --- The cases ------------------------------------------------------------------------------------

type Case = { mib: number; model: string; mime: string; vendor: Vendor | null }

/** Each size on a model whose limit is at least that size: a 5 MiB, a 10 MiB and a 20 MiB model. */
const ACCEPTED: Case[] = [
  { mib: 1, model: 'anthropic/claude-sonnet-4.5', mime: 'image/png', vendor: 'anthropic' },
  { mib: 4, model: 'anthropic/claude-sonnet-4.5', mime: 'application/pdf', vendor: 'anthropic' },
  { mib: 8, model: 'xai/grok-4-fast', mime: 'image/png', vendor: 'xai' },
  { mib: 20, model: 'sandbox/echo', mime: 'image/png', vendor: null },
  // Its pages are counted (one), so its estimate fits gpt-5's context (it did not when guessed from the size).
  { mib: 20, model: 'openai/gpt-5', mime: 'application/pdf', vendor: 'openai' },
]

/** One byte over each chosen model's limit (5, 10 and 20 MiB). */
const OVER: { model: string; mime: string; limit: number }[] = [
  { model: 'anthropic/claude-sonnet-4.5', mime: 'image/png', limit: 5 * MiB },
  { model: 'xai/grok-4-fast', mime: 'image/png', limit: 10 * MiB },
  { model: 'sandbox/echo', mime: 'application/pdf', limit: 20 * MiB },
]

const TABLES = ['chats', 'runs', 'parts', 'part_media', 'media_blobs', 'idempotency_keys', 'balance_entries', 'provider_calls'] as const

type Timed = { status: number; text: string; acceptMs: number; doneMs: number }

describe('large attachments through the real server process (issue 11)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-attachments-'))
  const dbFile = join(dataDir, 'parley.db')
  let replay: ReplayServer
  let server: ServerProcess | undefined
  let devKey = ''
  let limits: Map<string, { mime_types: string[]; max_bytes_per_attachment: number }>

  const api = (path: string, init: { method?: string; body?: unknown; timeoutMs?: number } = {}) => request(server!.url, path, { key: devKey, ...init })

  const newChat = async (): Promise<string> => {
    const res = await api('/api/v1/chats', { method: 'POST', body: {} })
    expect(res.status, res.text).toBe(201)
    return res.json().id
  }

  const rowCounts = () =>
    readDatabase(dbFile, (db) => Object.fromEntries(TABLES.map((t) => [t, (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n])))

  /** POSTs an already serialised turn body; times the answer's headers and the body's end. */
  const postRaw = async (chatId: string, body: string): Promise<Timed> => {
    const started = performance.now()
    const response = await fetch(`${server!.url}/api/v1/chats/${chatId}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(30_000),
    })
    const acceptMs = performance.now() - started
    const text = await response.text()
    return { status: response.status, text, acceptMs, doneMs: performance.now() - started }
  }

  const turnBody = (model: string, mime: string, bytes: Buffer, text: string) =>
    JSON.stringify({ model, input: [{ type: 'prompt', text, media: [{ mime, data_base64: bytes.toString('base64'), filename: `big.${mime === 'application/pdf' ? 'pdf' : 'png'}` }] }] })

  beforeAll(async () => {
    replay = await startReplayServer()
    const env: Record<string, string> = { DATA_DIR: dataDir, NODE_ID: 'e2e-attachments', SANDBOX: 'on' }
    for (const vendor of Object.keys(KEYS) as Vendor[]) {
      env[KEY_VARIABLES[vendor]!] = KEYS[vendor]!
      env[`${vendor.toUpperCase()}_BASE_URL`] = replay.baseUrl(vendor)
    }
    server = await startServer({ env, timeoutMs: 25_000 })
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    // The limits as the API shows them (spec §2.7: the effective ceiling, platform limit included).
    const models = await api('/api/v1/models')
    expect(models.status, models.text).toBe(200)
    limits = new Map((models.json() as any[]).map((m) => [m.name, m.media.user]))
  })

  afterAll(async () => {
    await server?.stop()
    await replay?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the chosen models take these types and sizes, and no more, by the catalogue', () => {
    for (const c of ACCEPTED) {
      const policy = limits.get(c.model)
      expect(policy, c.model).toBeDefined()
      expect(policy!.mime_types).toContain(c.mime)
      expect(policy!.max_bytes_per_attachment).toBeGreaterThanOrEqual(c.mib * MiB)
    }
    for (const o of OVER) expect(limits.get(o.model)!.max_bytes_per_attachment, o.model).toBe(o.limit)
  })

  test.each(ACCEPTED)('$mib MiB $mime on $model: 200, streamed to done, stored byte for byte', async (c) => {
    const bytes = fileOf(c.mime, c.mib * MiB)
    const chatId = await newChat()
    const before = c.vendor ? replay.requestsTo(c.vendor).length : 0
    const body = turnBody(c.model, c.mime, bytes, `describe this ${c.mib} MiB file`)

    const answer = await postRaw(chatId, body)
    expect(answer.status, answer.text.slice(0, 500)).toBe(200)
    const events = [...answer.text.matchAll(/^event: (.+)$/gm)].map((m) => m[1])
    expect(events.slice(0, 3)).toEqual(['run', 'config_warnings', 'translation_warnings'])
    expect(events.at(-1), answer.text.slice(-500)).toBe('done')
    // The model took it: no attachment became a marker.
    expect(answer.text).not.toContain('attachment_replaced_by_marker')
    if (c.vendor) {
      const sent = replay.requestsTo(c.vendor).slice(before)
      expect(sent).toHaveLength(1)
      // The vendor got the bytes (inside its own JSON, in base64).
      expect(JSON.stringify(sent[0]!.body)).toContain(bytes.subarray(0, 3 * 1024).toString('base64'))
    }

    const history = await api(`/api/v1/chats/${chatId}/history?include=full`, { timeoutMs: 20_000 })
    expect(history.status, history.text.slice(0, 500)).toBe(200)
    const parts = history.json().data as any[]
    // OpenAI's answer brings a reasoning part before its message.
    const [prompt, reply] = [parts[0], parts.at(-1)]
    expect(prompt.part).toEqual({ type: 'prompt', text: `describe this ${c.mib} MiB file` })
    expect(reply.part.type).toBe('message')
    expect(prompt.media).toHaveLength(1)
    const media = prompt.media[0]
    expect(media).toMatchObject({ media_id: expect.stringMatching(UUID), mime: c.mime, byte_len: c.mib * MiB })
    if (c.mime === 'image/png') expect(media).toMatchObject({ width: 64, height: 48 })
    else expect(media).toMatchObject({ page_count: 1 })
    const back = Buffer.from(media.data_base64 as string, 'base64')
    expect(back.length).toBe(bytes.length)
    expect(back.equals(bytes)).toBe(true)
  })

  test.each(OVER)('one byte over $model\'s $limit bytes: 422 with a pointer, nothing written', async (o) => {
    const chatId = await newChat()
    const before = rowCounts()
    const vendorCalls = replay.requests.length
    const answer = await postRaw(chatId, turnBody(o.model, o.mime, fileOf(o.mime, o.limit + 1), 'one byte too many'))
    expect(answer.status, answer.text).toBe(422)
    const error = JSON.parse(answer.text).error
    expect(error.code).toBe('unsupported_attachment')
    expect(error.message).toContain(String(o.limit))
    expect(error.details.problems).toEqual([{ in: 'body', pointer: '/input/0/media/0/data_base64', message: expect.stringContaining(`${o.limit + 1} bytes`) }])
    expect(rowCounts()).toEqual(before)
    expect(replay.requests.length).toBe(vendorCalls)
    const history = await api(`/api/v1/chats/${chatId}/history`)
    expect(history.json().data).toEqual([])
  })

  /** The 20 MiB PDF on the sandbox, so the server's own work is what is timed. */
  test('a 20 MiB PDF, timed: time to accept, and GET /api/v1/version latency meanwhile', async () => {
    const bytes = pdfOfSize(20 * MiB)
    const chatId = await newChat()
    const body = turnBody('sandbox/echo-1m', 'application/pdf', bytes, 'timed')

    // Baseline latency of /version with nothing else going on.
    const probe = async () => {
      const started = performance.now()
      const res = await fetch(`${server!.url}/api/v1/version`, { signal: AbortSignal.timeout(15_000) })
      await res.arrayBuffer()
      expect(res.status).toBe(200)
      return performance.now() - started
    }
    const idle: number[] = []
    for (let i = 0; i < 20; i++) idle.push(await probe())

    let polling = true
    const during: number[] = []
    const poller = (async () => {
      while (polling) {
        during.push(await probe())
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    const answer = await postRaw(chatId, body)
    polling = false
    await poller
    expect(answer.status, answer.text.slice(0, 500)).toBe(200)
    expect(answer.text).toMatch(/event: done/)

    const max = (xs: number[]) => Math.max(...xs)
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const figures = {
      body_bytes: Buffer.byteLength(body),
      accept_ms: Math.round(answer.acceptMs),
      done_ms: Math.round(answer.doneMs),
      version_idle_median_ms: +median(idle).toFixed(1),
      version_during_probes: during.length,
      version_during_median_ms: +median(during).toFixed(1),
      version_during_max_ms: Math.round(max(during)),
    }
    console.log(`20 MiB turn figures: ${JSON.stringify(figures)}`)
    expect(during.length).toBeGreaterThan(0)

    const history = await api(`/api/v1/chats/${chatId}/history?include=full`, { timeoutMs: 20_000 })
    expect(history.status).toBe(200)
    const media = (history.json().data as any[])[0].media[0]
    expect(media).toMatchObject({ mime: 'application/pdf', byte_len: 20 * MiB, filename: 'big.pdf' })
    expect(Buffer.from(media.data_base64 as string, 'base64').equals(bytes)).toBe(true)
  })
})
