import { EventEmitter } from 'node:events'
import type { FastifyReply } from 'fastify'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { openingFrames, RunChannel } from '../../../src/actors/run-channel.ts'
import { HEARTBEAT_MS, writeRunFrames, type OpenStreams } from '../../../src/http/sse/write-run-stream.ts'

/** A submission's log once the machine admitted it as run-1, opening with `opening`. */
function admittedChannel(opening: { event: string; data: unknown }[]): RunChannel {
  const channel = new RunChannel()
  channel.admit('run-1', opening)
  return channel
}
const turnOpening = () => openingFrames({ chatId: 'chat-1', runId: 'run-1', closedToolCalls: [], configWarnings: [], translationWarnings: [] })

/** The raw response as the stream writer uses it: what was written, and whether it ended. */
class FakeResponse extends EventEmitter {
  writes: string[] = []
  headers: Record<string, string> | null = null
  writableEnded = false
  destroyed = false
  writeHead(_status: number, headers: Record<string, string>) {
    this.headers = headers
  }
  write(chunk: string) {
    this.writes.push(chunk)
    return true
  }
  end(chunk?: string, then?: () => void) {
    if (chunk) this.writes.push(chunk)
    this.writableEnded = true
    then?.()
  }
  get text() {
    return this.writes.join('')
  }
}

function open(channel = admittedChannel(turnOpening()), streams?: OpenStreams) {
  const res = new FakeResponse()
  const reply = { hijack: vi.fn(), raw: res, request: { id: 'req-1' } } as unknown as FastifyReply
  writeRunFrames(reply, 'run-1', channel, 0, streams)
  return { res, channel }
}

const events = (text: string) => [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1])
const tick = () => new Promise<void>((resolve) => process.nextTick(resolve))

describe('writeRunFrames: a turn stream', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }))
  afterEach(() => vi.useRealTimers())

  it('opens with run, config_warnings and translation_warnings, then follows the channel to done', async () => {
    const { res, channel } = open()
    await tick()
    expect(res.headers?.['content-type']).toBe('text/event-stream; charset=utf-8')
    expect(events(res.text)).toEqual(['run', 'config_warnings', 'translation_warnings'])
    channel.push('block_start', { kind: 'text' })
    channel.push('delta', { kind: 'text', text: 'hi' })
    channel.push('block_stop', {})
    channel.end('done', { stop_reason: 'end_turn' })
    expect(res.writableEnded).toBe(true)
    expect(events(res.text)).toEqual(['run', 'config_warnings', 'translation_warnings', 'block_start', 'delta', 'block_stop', 'done'])
  })

  it('writes the frames of one tick in one write, and later frames in writes of their own', async () => {
    const { res, channel } = open()
    await tick()
    expect(res.writes).toHaveLength(1)
    channel.push('delta', { kind: 'text', text: 'a' })
    await tick()
    channel.push('delta', { kind: 'text', text: 'b' })
    await tick()
    expect(res.writes).toHaveLength(3)
    // Only the id line is added to the frame (decision 038): block 0 not started, so the deltas sit at its offsets 1 and 2.
    expect(res.writes[2]).toBe('event: delta\ndata: {"kind":"text","text":"b"}\nid: run-1:10000000002\n\n')
  })

  it(`sends a comment heartbeat every ${HEARTBEAT_MS / 1000} s while the run is quiet, and stops once it ends`, async () => {
    const { res, channel } = open()
    await tick()
    vi.advanceTimersByTime(HEARTBEAT_MS - 1)
    await tick()
    expect(res.text).not.toContain(': heartbeat')
    vi.advanceTimersByTime(1)
    await tick()
    expect(res.writes.at(-1)).toBe(': heartbeat\n\n')
    vi.advanceTimersByTime(HEARTBEAT_MS)
    await tick()
    expect(res.text.match(/: heartbeat/g)).toHaveLength(2)
    channel.end('done', {})
    vi.advanceTimersByTime(3 * HEARTBEAT_MS)
    await tick()
    expect(res.text.match(/: heartbeat/g)).toHaveLength(2)
  })

  it('a closed connection only unsubscribes: the channel goes on and nothing more is written', async () => {
    const { res, channel } = open()
    await tick()
    res.destroyed = true
    res.emit('close')
    channel.push('delta', { kind: 'text', text: 'unseen' })
    channel.end('done', {})
    await tick()
    expect(res.text).not.toContain('unseen')
  })

  it('on shutdown ends the stream with an unavailable error naming the run', async () => {
    const streams: OpenStreams = new Set()
    const { res } = open(admittedChannel(turnOpening()), streams)
    await tick()
    await Promise.all([...streams].map((end) => end()))
    expect(res.writableEnded).toBe(true)
    expect(events(res.text).at(-1)).toBe('error')
    expect(res.text).toContain('"code":"unavailable"')
    expect(res.text).toContain('"run_id":"run-1"')
    expect(streams.size).toBe(0)
  })
})

/** A response whose socket buffer is full until `drain()`: what it got, and how many writes it refused. */
class SlowResponse extends FakeResponse {
  full = true
  override write(chunk: string) {
    this.writes.push(chunk)
    return !this.full
  }
  drain() {
    this.full = false
    this.emit('drain')
  }
}

describe('writeRunFrames: readers with a cursor', () => {
  const reader = (channel: RunChannel, res: FakeResponse, after = 0) => {
    const reply = { hijack: vi.fn(), raw: res, request: { id: 'req' } } as unknown as FastifyReply
    writeRunFrames(reply, 'run-1', channel, after)
  }
  const produce = (channel: RunChannel, n: number) => {
    channel.push('block_start', { kind: 'text' })
    for (let i = 0; i < n; i++) channel.push('delta', { kind: 'text', text: `d${i}` })
    channel.push('block_stop', {})
  }

  it('two readers at once each get every frame once, in order, with the same ids; the channel keeps one copy', async () => {
    const channel = admittedChannel([{ event: 'run', data: {} }])
    const a = new FakeResponse()
    const b = new FakeResponse()
    reader(channel, a)
    produce(channel, 3)
    reader(channel, b)
    await tick()
    channel.end('done', {})
    expect(a.text).toBe(b.text)
    expect(events(a.text)).toEqual(['run', 'block_start', 'delta', 'delta', 'delta', 'block_stop', 'done'])
    // One log: its admission and the seven frames, whatever the number of readers.
    expect(channel.size).toBe(8)
  })

  it('a slow reader waits for drain and neither the run nor a fast reader waits for it', async () => {
    const channel = admittedChannel([{ event: 'run', data: {} }])
    const slow = new SlowResponse()
    const fast = new FakeResponse()
    reader(channel, slow)
    reader(channel, fast)
    await tick()
    // The slow socket refused its first write: the slow reader takes nothing more until drain.
    produce(channel, 50)
    await tick()
    channel.end('done', {})
    expect(fast.writableEnded).toBe(true)
    expect(events(fast.text)).toHaveLength(1 + 52 + 1)
    expect(slow.writes).toHaveLength(1)
    expect(slow.writableEnded).toBe(false)
    slow.drain()
    expect(slow.writableEnded).toBe(true)
    expect(slow.text).toBe(fast.text)
  })

  it('resumes after an id: only the frames after it, a delta it saw part of cut at the offset', async () => {
    const channel = admittedChannel([{ event: 'run', data: {} }])
    produce(channel, 2)
    channel.end('done', {})
    const whole = new FakeResponse()
    reader(channel, whole)
    const ids = [...whole.text.matchAll(/^id: run-1:(\d+)$/gm)].map((m) => Number(m[1]))
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
    const resumed = new FakeResponse()
    reader(channel, resumed, ids[2]!)
    expect(events(resumed.text)).toEqual(['delta', 'block_stop', 'done'])
    const mid = new FakeResponse()
    reader(channel, mid, ids[2]! + 1)
    expect(mid.text).toContain('"text":"1"')
  })
})
