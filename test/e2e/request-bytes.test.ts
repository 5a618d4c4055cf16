import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { pngOfSize } from '../helpers/sized-files.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { postTurn, request } from './turn-client.ts'
import { startReplayServer, type ReplayServer, type RecordedRequest } from './vendor-replay-server.ts'

/**
 * Issue 33 (decision 045): ten turns of one chat on Claude Haiku, each with a 4.9 MB PNG. Before,
 * the vendor request grew by the whole history's attachments (32.7 MB at turn 5, refused with a
 * 413). Now no request the vendor double records is over the model's `max_request_bytes` as the
 * catalogue file gives it (the vendor's documented 32 MB), every turn streams to `done`, and the
 * later runs' manifests list the attachments left out.
 */

const MODEL = 'anthropic/claude-haiku-4.5'
const TURNS = 10
const PNG_BYTES = 4_900_000

/** The catalogue file's figure for the model, with its source: what the vendor documents, not a constant of the code. */
function catalogued(): { bytes: number; source: string } {
  const file = JSON.parse(readFileSync(join(import.meta.dirname, '../../catalogue/models.json'), 'utf8'))
  const entry = file.models.find((m: { name: string }) => m.name === MODEL)
  return { bytes: entry.max_request_bytes, source: entry.sources.max_request_bytes.source }
}

/** A request's size as sent: its Content-Length, or its JSON written out again (the SDK sends it compact). */
const sizeOf = (r: RecordedRequest) => Math.max(Number(r.headers['content-length'] ?? 0), Buffer.byteLength(JSON.stringify(r.body), 'utf8'))

describe('a chat of large images stays within the vendor request limit (issue 33)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-request-bytes-'))
  let replay: ReplayServer
  let server: ServerProcess | undefined
  let key = ''

  beforeAll(async () => {
    replay = await startReplayServer()
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      NODE_ID: 'e2e-request-bytes',
      ANTHROPIC_API_KEY: 'sk-ant-api03-replay-anthropic-key',
      ANTHROPIC_BASE_URL: replay.baseUrl('anthropic'),
    }
    server = await startServer({ env, timeoutMs: 25_000 })
    key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  })

  afterAll(async () => {
    await server?.stop()
    await replay?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test(`${TURNS} turns with a ${PNG_BYTES}-byte PNG each on ${MODEL}`, { timeout: 240_000 }, async () => {
    const limit = catalogued()
    // Anthropic documents 32 MB (decision 045 on why it is read as 32,000,000 bytes).
    expect(limit.bytes).toBe(32_000_000)
    expect(limit.source).toMatch(/32 MB/)
    const chat = await request(server!.url, '/api/v1/chats', { key, method: 'POST', body: {} })
    expect(chat.status, chat.text).toBe(201)
    const chatId = chat.json().id as string

    const runs: string[] = []
    for (let turn = 1; turn <= TURNS; turn++) {
      const before = replay.requestsTo('anthropic').length
      // Each image differs (its size by a byte), so no two are one file.
      const png = pngOfSize(PNG_BYTES + turn)
      const body = { model: MODEL, input: [{ type: 'prompt', text: `picture ${turn}`, media: [{ mime: 'image/png', data_base64: png.toString('base64'), filename: `p${turn}.png` }] }] }
      const answer = await postTurn(server!.url, key, chatId, body, 60_000)
      expect(answer.ok, answer.ok ? '' : answer.text.slice(0, 500)).toBe(true)
      if (!answer.ok) return
      expect(await answer.closed).toBe('end')
      expect(answer.frames.at(-1)!.event, `turn ${turn}`).toBe('done')
      runs.push(answer.frames[0]!.data.run_id)

      const sent = replay.requestsTo('anthropic').slice(before)
      expect(sent.length, `turn ${turn}: vendor calls`).toBeGreaterThan(0)
      for (const r of sent) expect(sizeOf(r), `turn ${turn}: request bytes`).toBeLessThanOrEqual(limit.bytes)
      // The turn's own image is always sent.
      expect(JSON.stringify(sent.at(-1)!.body)).toContain(png.subarray(0, 3 * 1024).toString('base64'))
    }

    // From the turn whose images no longer fit on, the run's manifest names those left out, oldest first.
    const manifestOf = async (runId: string) => (await request(server!.url, `/api/v1/runs/${runId}`, { key })).json().manifest
    const first = await manifestOf(runs[0]!)
    expect(first.context.attachments_left_out).toEqual([])
    const last = await manifestOf(runs.at(-1)!)
    const leftOut = last.context.attachments_left_out as { ordinal: number; mime: string; byte_len: number; reason: string; max_request_bytes: number }[]
    expect(leftOut.length).toBeGreaterThanOrEqual(TURNS - 5)
    expect(leftOut.every((a) => a.reason === 'request_bytes' && a.mime === 'image/png' && a.max_request_bytes === limit.bytes)).toBe(true)
    expect(leftOut.map((a) => a.ordinal)).toEqual([...leftOut.map((a) => a.ordinal)].sort((a, b) => a - b))
    // The first turn's prompt is an anchor (the platform's default anchor_parts), sent whole as anchors
    // always are; the history's oldest image, turn 2's, is the first left out.
    expect(last.context.segments[0]).toMatchObject({ first_ordinal: 1, treatment: 'verbatim' })
    expect(leftOut[0]!.byte_len).toBe(PNG_BYTES + 2)
    expect(last.warnings.translation).toContainEqual(expect.objectContaining({ code: 'attachment_replaced_by_marker', details: expect.objectContaining({ max_request_bytes: limit.bytes }) }))
  })
})
