import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { request } from './turn-client.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { blocks, readFrames, seqOf, type Frame } from './run-events-client.ts'

describe('resuming a turn stream with Last-Event-ID (real server)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-resume-'))
  const env = { DATA_DIR: dataDir, NODE_ID: 'e2e-resume-node' }
  let server: ServerProcess
  let key = ''
  const post = (path: string, body: unknown) => request(server.url, path, { method: 'POST', key, body })
  const turn = (chatId: string, text: string, stopWhen?: (frames: Frame[]) => boolean) =>
    readFrames(
      `${server.url}/api/v1/chats/${chatId}/responses`,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text }] }) },
      stopWhen,
    )
  const events = (runId: string, headers: Record<string, string> = {}, query = '') =>
    readFrames(`${server.url}/api/v1/runs/${runId}/events${query}`, { headers: { authorization: `Bearer ${key}`, ...headers } })

  afterAll(async () => {
    await server?.stop()
  })

  it(
    'a client that drops mid-turn and resumes gets every remaining frame once, in order, ending with done; a replay equals the persisted output',
    async () => {
      server = await startServer({ env })
      key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
      const chat = (await post('/api/v1/chats', {})).json()
      // Dropped in the middle of the text block, after its third delta.
      const first = await turn(chat.id, '/slow 50\n/think plan it well\none two three four five six seven eight', (fs) => fs.filter((f) => f.event === 'delta' && f.data.kind === 'text').length === 3)
      expect(first.status).toBe(200)
      expect(first.frames.every((f) => f.id !== null)).toBe(true)
      const runId = first.frames[0]!.data.run_id
      const resumed = await events(runId, { 'last-event-id': first.frames.at(-1)!.id! })
      expect(resumed.status).toBe(200)
      expect(resumed.frames.at(-1)!.event).toBe('done')
      const all = [...first.frames, ...resumed.frames]
      // Exactly once and in order: the ids strictly increase across the drop.
      const seqs = all.map(seqOf)
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b))
      // The whole stream read from the start once the run has ended: the same blocks as the two halves, and the ledger's parts.
      const replay = await events(runId)
      expect(replay.frames.map((f) => f.event).filter((e) => e !== 'delta')).toEqual(all.map((f) => f.event).filter((e) => e !== 'delta'))
      expect(blocks(replay.frames)).toEqual(blocks(all))
      const history = (await request(server.url, `/api/v1/chats/${chat.id}/history?limit=100`, { key })).json()
      const persisted = history.data.map((p: any) => p.part).filter((p: any) => p.type === 'reasoning' || p.type === 'message')
      expect(blocks(replay.frames).map((b) => b.text)).toEqual(persisted.map((p: any) => p.text))
      expect(replay.frames.at(-1)!.data.usage).toEqual(resumed.frames.at(-1)!.data.usage)
      // The same through ?after, and nothing after done.
      expect((await events(runId, {}, `?after=${encodeURIComponent(replay.frames.at(-1)!.id!)}`)).frames).toEqual([])
      expect((await events(runId, {}, `?after=${encodeURIComponent('someone-else:3')}`)).status).toBe(422)
    },
    machineCeiling(60_000),
  )

  it(
    'after the server restarted mid-run, the resumed stream ends with the run\'s error event',
    async () => {
      const chat = (await post('/api/v1/chats', {})).json()
      const first = await turn(chat.id, '/slow 400\none two three four five six seven eight nine ten', (fs) => fs.some((f) => f.event === 'delta'))
      const runId = first.frames[0]!.data.run_id
      server.child.kill('SIGKILL')
      await new Promise((resolve) => server.child.once('exit', resolve))
      server = await startServer({ env })
      const resumed = await events(runId, { 'last-event-id': first.frames.at(-1)!.id! })
      expect(resumed.status).toBe(200)
      const last = resumed.frames.at(-1)!
      expect(last.event).toBe('error')
      expect(last.data.code).toBe('interrupted')
      expect(last.data.details.run_id).toBe(runId)
      const seqs = [...first.frames, ...resumed.frames].map(seqOf)
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b))
    },
    machineCeiling(60_000),
  )
})
