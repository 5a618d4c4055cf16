import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { FIXTURES, type ReplayResponse, type Vendor } from './vendor-fixtures/index.ts'

/**
 * A loopback stand-in for the six vendor APIs. Each vendor lives under its own prefix (its
 * fixture's `basePath`, e.g. `/anthropic/v1`), so one server can be every `<VENDOR>_BASE_URL`.
 * A POST to a vendor's streaming endpoint is answered with the next queued response for that
 * vendor, else its plain text fixture; events are written one network write at a time, some split
 * in two, with small gaps, so the SDK parses a real stream as it arrives. Every request is recorded.
 */

export type RecordedRequest = {
  vendor: Vendor | null
  method: string
  /** Path and query, as sent. */
  path: string
  headers: IncomingHttpHeaders
  /** The JSON body, parsed (undefined when there was none or it was not JSON). */
  body: any
}

export type ReplayServer = {
  url: string
  /** The `<VENDOR>_BASE_URL` for a vendor: this server plus the vendor's prefix. */
  baseUrl: (vendor: Vendor) => string
  /** Every request so far, in arrival order. */
  requests: RecordedRequest[]
  requestsTo: (vendor: Vendor) => RecordedRequest[]
  /** Answers the next streaming call to `vendor` with `response` (queued, first in first out). */
  respondNext: (vendor: Vendor, response: ReplayResponse) => void
  /** Drops every queued response (so a test that failed early leaves nothing for the next). */
  clearQueues: () => void
  close: () => Promise<void>
}

const GAP_MS = 3
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const vendorOf = (path: string): Vendor | null =>
  (Object.values(FIXTURES).find((f) => path === f.basePath || path.startsWith(`${f.basePath}/`))?.vendor as Vendor | undefined) ?? null

/** Writes a stream's events: every other event in two writes (a read may end mid-event), a gap after each write. */
async function writeStream(res: ServerResponse, events: string[], end: 'close' | 'hang' | 'destroy' = 'close'): Promise<void> {
  for (const [i, event] of events.entries()) {
    const writes = i % 2 === 1 && event.length > 16 ? [event.slice(0, event.length >> 1), event.slice(event.length >> 1)] : [event]
    for (const bytes of writes) {
      if (res.destroyed) return
      res.write(bytes)
      await sleep(GAP_MS)
    }
  }
  if (end === 'close') res.end()
  else if (end === 'destroy') res.socket?.destroy()
}

async function answer(res: ServerResponse, response: ReplayResponse): Promise<void> {
  if (response.kind === 'hang') return
  if (response.kind === 'json') {
    res.writeHead(response.status, response.headers).end(JSON.stringify(response.body))
    return
  }
  res.writeHead(200, { ...response.headers, connection: 'keep-alive' })
  res.flushHeaders()
  await writeStream(res, response.events, response.end)
}

export async function startReplayServer(): Promise<ReplayServer> {
  const requests: RecordedRequest[] = []
  const queues = new Map<Vendor, ReplayResponse[]>()

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const path = req.url ?? '/'
      const vendor = vendorOf(path.split('?')[0]!)
      const raw = Buffer.concat(chunks).toString('utf8')
      let body: unknown
      try {
        body = raw === '' ? undefined : JSON.parse(raw)
      } catch {
        body = undefined
      }
      requests.push({ vendor, method: req.method ?? '', path, headers: req.headers, body })

      if (vendor === null || req.method !== 'POST' || !FIXTURES[vendor].isStreamPath(path)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `replay server: no route for ${req.method} ${path}` } }))
        return
      }
      const response = queues.get(vendor)?.shift() ?? FIXTURES[vendor].text.response
      answer(res, response).catch(() => res.destroy())
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url,
    baseUrl: (vendor) => `${url}${FIXTURES[vendor].basePath}`,
    requests,
    requestsTo: (vendor) => requests.filter((r) => r.vendor === vendor),
    respondNext: (vendor, response) => {
      const queue = queues.get(vendor) ?? []
      queue.push(response)
      queues.set(vendor, queue)
    },
    clearQueues: () => queues.clear(),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  }
}
