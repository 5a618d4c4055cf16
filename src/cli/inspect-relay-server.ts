import { createInspectorServer } from '@statelyai/inspect/server'
import { readFileSync } from 'node:fs'
import { type IncomingMessage, Server, type ServerResponse } from 'node:http'
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
  withOfflineNotice(http)
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

/** The chat machine drawn offline (`npm run diagram`), which the bridge page links to. */
export const CHAT_MACHINE_DRAWING_PATH = '/chat-machine.md'
const DRAWING_FILE = new URL('../../docs/chat-machine.md', import.meta.url)

/**
 * What the bridge page says above Stately's inspector (issue 23): the frame is stately.ai's page and
 * needs the internet (offline it stays blank); the relay, its WebSocket and the drawing of the chat
 * machine are on this machine.
 */
export const OFFLINE_NOTICE =
  '<p id="parley-offline-notice" style="margin:0;padding:6px 10px;font:13px/1.4 system-ui,sans-serif;background:#fff8d6;border-bottom:1px solid #e0d38a">' +
  'The inspector below is <a href="https://stately.ai/inspect" target="_blank" rel="noopener">stately.ai/inspect</a>, loaded from the internet: offline this frame stays blank. ' +
  'The relay and its WebSocket run on this machine and need no internet. ' +
  `Offline, read the chat machine as drawn by <code>npm run diagram</code>: <a href="${CHAT_MACHINE_DRAWING_PATH}" target="_blank">docs/chat-machine.md</a> (a Mermaid state diagram and its tables).` +
  '</p>'

// The library's page gives the frame the whole height; with the notice above it, the frame takes the rest.
const LAYOUT = '<style>body { display: flex; flex-direction: column; } #inspector { flex: 1; height: auto; min-height: 0; }</style>'

/**
 * The library answers every request with its bridge page and takes no say in it: its handler is kept
 * and its page given the notice, and the drawing is served at CHAT_MACHINE_DRAWING_PATH as text.
 * The WebSocket is the HTTP server's `upgrade`, untouched.
 */
function withOfflineNotice(http: Server) {
  const libraryHandlers = http.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>
  http.removeAllListeners('request')
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.split('?')[0] === CHAT_MACHINE_DRAWING_PATH) {
      let text: string
      try {
        text = readFileSync(DRAWING_FILE, 'utf8')
      } catch {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('docs/chat-machine.md is missing: run npm run diagram\n')
        return
      }
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(text)
      return
    }
    const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse
    res.end = ((chunk?: unknown) =>
      end(typeof chunk === 'string' ? chunk.replace('</head>', `${LAYOUT}</head>`).replace('<body>', `<body>${OFFLINE_NOTICE}`) : chunk)) as ServerResponse['end']
    for (const handler of libraryHandlers) handler.call(http, req, res)
  })
}
