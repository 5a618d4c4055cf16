import { beforeAll, describe, expect, it } from 'vitest'
import { blocks, readFrames, seqOf, type Frame } from '../../e2e/run-events-client.ts'
import { request } from '../../e2e/turn-client.ts'
import { useSandboxChat } from '../../helpers/turns.ts'

/**
 * Resuming a turn stream with Last-Event-ID over a real socket: the app in process, listening on a
 * loopback port, the client dropping its connection mid-turn as fetch does. Moved from
 * test/e2e/resume.test.ts, which keeps the case that needs a process (a restart mid-run).
 */
const sandbox = useSandboxChat()
let url = ''
beforeAll(async () => {
  url = await sandbox.ctx.app.listen({ port: 0, host: '127.0.0.1' })
})

describe('resuming a turn stream with Last-Event-ID (real socket, in process)', () => {
  const key = () => sandbox.org.key
  const turn = (chatId: string, text: string, stopWhen?: (frames: Frame[]) => boolean) =>
    readFrames(
      `${url}/api/v1/chats/${chatId}/responses`,
      { method: 'POST', headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text }] }) },
      stopWhen,
    )
  const events = (runId: string, headers: Record<string, string> = {}, query = '') =>
    readFrames(`${url}/api/v1/runs/${runId}/events${query}`, { headers: { authorization: `Bearer ${key()}`, ...headers } })

  it('a client that drops mid-turn and resumes gets every remaining frame once, in order, ending with done; a replay equals the persisted output', async () => {
    const chatId = sandbox.chatId
    // Dropped in the middle of the text block, after its third delta.
    const first = await turn(chatId, '/slow 50\n/think plan it well\none two three four five six seven eight', (fs) => fs.filter((f) => f.event === 'delta' && f.data.kind === 'text').length === 3)
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
    const history = (await request(url, `/api/v1/chats/${chatId}/history?limit=100`, { key: key() })).json()
    const persisted = history.data.map((p: any) => p.part).filter((p: any) => p.type === 'reasoning' || p.type === 'message')
    expect(blocks(replay.frames).map((b) => b.text)).toEqual(persisted.map((p: any) => p.text))
    expect(replay.frames.at(-1)!.data.usage).toEqual(resumed.frames.at(-1)!.data.usage)
    // The same through ?after, and nothing after done.
    expect((await events(runId, {}, `?after=${encodeURIComponent(replay.frames.at(-1)!.id!)}`)).frames).toEqual([])
    expect((await events(runId, {}, `?after=${encodeURIComponent('someone-else:3')}`)).status).toBe(422)
  })
})

