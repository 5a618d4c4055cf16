import { randomBytes } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import { attachment, readTurnEvents, type TurnEvent } from '../../clients/typescript/src/index.ts'

/** A response body that arrives in the given pieces, as a network read would cut it. */
const bodyOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })

const read = async (body: ReadableStream<Uint8Array>) => {
  const events: TurnEvent[] = []
  for await (const event of readTurnEvents(body)) events.push(event)
  return events
}

describe('readTurnEvents', () => {
  test('frames cut anywhere by the network come out whole; heartbeats and unknown events do not surface', async () => {
    const wire =
      'event: run\ndata: {"chat_id":"c","run_id":"r","closed_tool_calls":[]}\n\n' +
      ': heartbeat\n\n' +
      'event: something_newer\ndata: {"x":1}\n\n' +
      'event: delta\ndata: {"kind":"text","text":"héllo"}\n\n'
    // Cut inside a frame and inside the two bytes of "é".
    const bytes = new TextEncoder().encode(wire)
    const cut = wire.indexOf('héllo') + 2
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.subarray(0, 17))
        controller.enqueue(bytes.subarray(17, cut))
        controller.enqueue(bytes.subarray(cut))
        controller.close()
      },
    })
    expect(await read(body)).toEqual([
      { event: 'run', data: { chat_id: 'c', run_id: 'r', closed_tool_calls: [] } },
      { event: 'delta', data: { kind: 'text', text: 'héllo' } },
    ])
  })

  test('reading stops at the terminal event (done or error): nothing after it is yielded', async () => {
    const events = await read(bodyOf('event: block_stop\ndata: {}\n\nevent: error\ndata: {"code":"internal","message":"m"}\n\n', 'event: delta\ndata: {"kind":"text","text":"late"}\n\n'))
    expect(events.map((e) => e.event)).toEqual(['block_stop', 'error'])
  })
})

describe('attachment', () => {
  test('standard base64 of the bytes, the same as Node computes, also past the 32 KiB chunk the encoder works in', () => {
    for (const size of [0, 1, 2, 3, 0x8000, 0x8000 * 3 + 7]) {
      const bytes = randomBytes(size)
      expect(attachment(bytes, 'image/png').data_base64).toBe(bytes.toString('base64'))
    }
    expect(attachment(new Uint8Array([1]), 'text/plain', 'a.txt')).toEqual({ mime: 'text/plain', data_base64: 'AQ==', filename: 'a.txt' })
    expect(attachment(new Uint8Array([1]), 'text/plain')).not.toHaveProperty('filename')
  })
})
