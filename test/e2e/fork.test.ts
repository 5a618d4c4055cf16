import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { request } from './turn-client.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { readFrames } from './run-events-client.ts'

/**
 * Forking in a tool round trip against the real server (decision 037): the copy runs on the fork
 * copier's thread (src/store/fork-copier.ts), which the server process starts as `npm start` runs it.
 */
describe('forking a chat in the middle of a tool round trip (real server)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-fork-'))
  let server: ServerProcess
  let key = ''
  const post = (path: string, body: unknown) => request(server.url, path, { method: 'POST', key, body })
  const turn = (chatId: string, input: unknown[]) =>
    readFrames(`${server.url}/api/v1/chats/${chatId}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', input }),
    })
  const parts = async (chatId: string) => (await request(server.url, `/api/v1/chats/${chatId}/history?limit=100&include=full`, { key })).json().data.map((p: any) => p.part)

  afterAll(async () => {
    await server?.stop()
  })

  it(
    'the pending call is pending in the fork and answered there; the source goes on unchanged by it',
    async () => {
      server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'e2e-fork-node' } })
      key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
      const source = (await post('/api/v1/chats', { title: 'source' })).json().id
      const asked = await turn(source, [{ type: 'prompt', text: '/tool lookup {"order":42}' }])
      const call = asked.frames.at(-1)!.data.pending_tool_calls[0]
      expect(call).toMatchObject({ tool_name: 'lookup' })

      const forked = await post(`/api/v1/chats/${source}/fork`, { title: 'branch' })
      expect(forked.status, forked.text).toBe(201)
      const fork = forked.json()
      expect(fork).toMatchObject({ title: 'branch' })
      expect(fork.id).not.toBe(source)
      const sourceBefore = await parts(source)
      expect(await parts(fork.id)).toEqual(sourceBefore)

      const answered = await turn(fork.id, [{ type: 'tool_result', tool_use_id: call.tool_use_id, tool_name: 'lookup', text: 'shipped on Monday' }])
      expect(answered.status).toBe(200)
      expect(answered.frames.find((f) => f.event === 'run')!.data.closed_tool_calls).toEqual([call.tool_use_id])
      expect(answered.frames.at(-1)!.event).toBe('done')
      expect((await parts(fork.id)).filter((p: any) => p.type === 'tool_result')).toMatchObject([{ tool_use_id: call.tool_use_id, text: 'shipped on Monday' }])
      // The source still waits for its own answer to the call.
      expect(await parts(source)).toEqual(sourceBefore)
      const sourceAnswer = await turn(source, [{ type: 'tool_result', tool_use_id: call.tool_use_id, tool_name: 'lookup', text: 'lost' }])
      expect(sourceAnswer.frames.find((f) => f.event === 'run')!.data.closed_tool_calls).toEqual([call.tool_use_id])
    },
    machineCeiling(60_000),
  )
})
