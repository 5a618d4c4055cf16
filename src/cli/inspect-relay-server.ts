import { createInspectorServer } from '@statelyai/inspect/server'
import { Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type InspectRelay = { host: string; port: number; url: string; bridgePage: string; stop: () => Promise<void> }

/**
 * Stately's relay (its WebSocket and its bridge page, one port) listening on `host` only. The
 * library listens on every interface and takes no host, so its one `listen` call is given the host
 * here: `listen` is wrapped for the synchronous call that creates the relay, and put back at once.
 * Resolves once it listens, with where; rejects with the listen error (a port in use).
 */
export function startInspectRelay(options: { host: string; port: number }): Promise<InspectRelay> {
  const proto = Server.prototype as { listen: (...args: unknown[]) => Server }
  const ownListen = Object.hasOwn(proto, 'listen')
  const listen = proto.listen
  let server: Server | undefined
  proto.listen = function (this: Server, ...args: unknown[]) {
    server = this
    const onListening = args.find((arg) => typeof arg === 'function')
    return listen.call(this, { port: options.port, host: options.host }, onListening)
  }
  let relay: { stop(): void }
  try {
    relay = createInspectorServer({ port: options.port, autoOpen: false })
  } finally {
    if (ownListen) proto.listen = listen
    else delete (proto as { listen?: unknown }).listen
  }
  const http = server
  if (!http) return Promise.reject(new Error('the inspector relay did not listen'))
  // The library's WebSocket server re-emits the HTTP server's errors on itself, where nobody
  // listens: a port in use would be an uncaught exception. The bind fails on a later tick, so
  // taking that listener off here leaves the failure to this promise.
  http.removeAllListeners('error')
  // WebSocket connections outlive the HTTP server's own bookkeeping: stopping ends them here.
  const sockets = new Set<Socket>()
  http.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  return new Promise((resolve, reject) => {
    http.once('error', reject)
    http.once('listening', () => {
      const { address, port } = http.address() as AddressInfo
      const hostInUrl = address.includes(':') ? `[${address}]` : address
      resolve({
        host: address,
        port,
        url: `ws://${hostInUrl}:${port}`,
        bridgePage: `http://${hostInUrl}:${port}/`,
        stop: () =>
          new Promise<void>((done) => {
            http.once('close', () => done())
            relay.stop()
            for (const socket of sockets) socket.destroy()
          }),
      })
    })
  })
}
