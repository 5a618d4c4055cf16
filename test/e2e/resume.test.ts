import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { request } from './turn-client.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { readFrames, seqOf, type Frame } from './run-events-client.ts'

/**
 * Resuming across a restart needs the process: killed with SIGKILL mid-run and started again on the
 * same DATA_DIR. Resuming a dropped connection on a live server is test/http/routes/run-events-resume.test.ts.
 */
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
    'after the server restarted mid-run, the resumed stream ends with the run\'s error event',
    async () => {
      server = await startServer({ env })
      key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
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
