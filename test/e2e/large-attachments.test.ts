import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { fileOf, pdfOfSize } from '../helpers/sized-files.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { request } from './turn-client.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { startReplayServer, type ReplayServer } from './vendor-replay-server.ts'

/**
 * Issue 11: attachments of 1, 4, 8 and 20 MiB on models whose catalogue entry takes them answer
 * 200, stream to `done` and read back byte for byte; the limits the API shows for the chosen
 * models (one byte over them answers 422, in process: test/http/attachment-limits.test.ts).
 * The real server process; vendor models call a loopback replay server (test/e2e/vendors.test.ts).
 * The 20 MiB turn is timed, with GET /api/v1/version polled meanwhile to see whether the event
 * loop stalls; the figures are printed, not asserted (they depend on the machine).
 */

const MiB = 1024 * 1024
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const KEYS: Partial<Record<Vendor, string>> = { anthropic: 'sk-ant-api03-replay-anthropic-key', xai: 'xai-replay-key', openai: 'sk-proj-replay-openai-key' }
const KEY_VARIABLES: Partial<Record<Vendor, string>> = { anthropic: 'ANTHROPIC_API_KEY', xai: 'XAI_API_KEY', openai: 'OPENAI_API_KEY' }

// --- The cases ------------------------------------------------------------------------------------

type Case = { mib: number; model: string; mime: string; vendor: Vendor | null }

/** Each size on a model whose limit is at least that size: a 5 MiB, a 10 MiB and a 20 MiB model. */
const ACCEPTED: Case[] = [
  { mib: 1, model: 'anthropic/claude-haiku-4.5', mime: 'image/png', vendor: 'anthropic' },
  { mib: 4, model: 'anthropic/claude-haiku-4.5', mime: 'application/pdf', vendor: 'anthropic' },
  { mib: 8, model: 'xai/grok-4.3', mime: 'image/png', vendor: 'xai' },
  { mib: 20, model: 'sandbox/echo', mime: 'image/png', vendor: null },
  // Its pages are counted (one), so its estimate fits gpt-5's context (it did not when guessed from the size).
  { mib: 20, model: 'openai/gpt-5', mime: 'application/pdf', vendor: 'openai' },
]

/** One byte over each chosen model's limit (5, 10 and 20 MiB). */
const OVER: { model: string; mime: string; limit: number }[] = [
  { model: 'anthropic/claude-haiku-4.5', mime: 'image/png', limit: 5 * MiB },
  { model: 'xai/grok-4.3', mime: 'image/png', limit: 10 * MiB },
  { model: 'sandbox/echo', mime: 'application/pdf', limit: 20 * MiB },
]

type Timed = { status: number; text: string; acceptMs: number; doneMs: number }

describe('large attachments through the real server process (issue 11)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-attachments-'))
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
