import { once } from 'node:events'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { afterNextPoll } from '../../src/http/after-next-poll.ts'

/**
 * afterNextPoll (decision 061) is how a large body's whole-body steps and a tool bundle's copy to
 * the body-work pool let other sockets in between them. Shown by order, not by time: from inside
 * one socket's data callback, a second socket is made readable; the first callback, resumed after
 * afterNextPoll, finds the second one's data already handled.
 */
let server: Server
const received: Array<() => void> = []
const clients: Socket[] = []
let accepted = 0

beforeAll(async () => {
  server = createServer((socket) => {
    accepted++
    socket.on('data', () => received.shift()?.())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
})
afterAll(async () => {
  for (const client of clients) client.destroy()
  server.close()
  await once(server, 'close')
})

/** Two connections, both accepted by the server (so each one's data is read by the next poll that finds it). */
async function pair(): Promise<[Socket, Socket]> {
  const { port } = server.address() as { port: number }
  const before = accepted
  const open = async () => {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    clients.push(socket)
    return socket
  }
  const sockets: [Socket, Socket] = [await open(), await open()]
  while (accepted < before + 2) await new Promise((resolve) => setImmediate(resolve))
  return sockets
}

/** What `wait` lets happen: whether the second socket's data was handled before the first callback resumed. */
async function secondHandledWithin(wait: () => Promise<void>): Promise<boolean> {
  const [first, second] = await pair()
  let secondHandled = false
  const resumed = new Promise<boolean>((resolve) => {
    received.push(async () => {
      // Inside an I/O callback, as a request body's last chunk is: the second socket becomes readable now.
      second.write('second')
      await wait()
      resolve(secondHandled)
    })
    received.push(() => {
      secondHandled = true
    })
  })
  first.write('first')
  return resumed
}

describe('afterNextPoll', () => {
  it('resumes an I/O callback only after the loop has read the sockets that became readable meanwhile', async () => {
    expect(await secondHandledWithin(afterNextPoll)).toBe(true)
  })

  it('where one setImmediate resumes before them (what it replaces)', async () => {
    expect(await secondHandledWithin(() => new Promise((resolve) => setImmediate(resolve)))).toBe(false)
  })
})
