/**
 * A client that asks `GET /healthz` every `everyMs`, one request at a time, from its own thread: a
 * stalled server delays its answers, never the poller's own clock. Each sample is the latency of
 * one answer (ms) and when it was asked, on `performance.timeOrigin`'s clock shared with the caller.
 */
import { Worker } from 'node:worker_threads'

export type PollSample = { at: number; ms: number; status: number }

export type HealthzPoller = {
  /**
   * Samples answered at or after `from` and asked before `to` (absolute times, as `nowAbsolute`),
   * once the poller has reported one asked after `to`.
   */
  between: (from: number, to: number) => Promise<PollSample[]>
  stop: () => Promise<void>
}

export const nowAbsolute = () => performance.timeOrigin + performance.now()

// Plain JavaScript: the worker runs without tsx. Samples travel back in batches every 50 ms.
const POLLER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const http = require('node:http')
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
const target = new URL(workerData.url + '/healthz')
let stopped = false
let batch = []
const now = () => performance.timeOrigin + performance.now()
function ask() {
  return new Promise((resolve) => {
    const at = now()
    const req = http.get({ agent, host: target.hostname, port: target.port, path: target.pathname }, (res) => {
      res.resume()
      res.on('end', () => resolve({ at, ms: now() - at, status: res.statusCode }))
    })
    req.on('error', () => resolve({ at, ms: now() - at, status: 0 }))
  })
}
async function loop() {
  while (!stopped) {
    const started = now()
    // Awaited before push: \`batch.push(await …)\` takes the array before the await, and a flush that
    // replaced it meanwhile would post the old one without this sample (the slowest answers first).
    const sample = await ask()
    batch.push(sample)
    const wait = workerData.everyMs - (now() - started)
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  }
  parentPort.postMessage(batch)
  parentPort.postMessage('stopped')
}
const flush = setInterval(() => { if (batch.length) { parentPort.postMessage(batch); batch = [] } }, 50)
parentPort.on('message', (m) => { if (m === 'stop') { stopped = true; clearInterval(flush) } })
loop()
`

export function startHealthzPoller(url: string, everyMs = 10): HealthzPoller {
  const samples: PollSample[] = []
  const worker = new Worker(POLLER_SOURCE, { eval: true, workerData: { url, everyMs } })
  let onStopped: () => void = () => {}
  const stopped = new Promise<void>((resolve) => (onStopped = resolve))
  worker.on('message', (message: PollSample[] | 'stopped') => {
    if (message === 'stopped') onStopped()
    else samples.push(...message)
  })
  return {
    between: async (from, to) => {
      while (!samples.some((s) => s.at > to)) await new Promise((resolve) => setTimeout(resolve, 20))
      return samples.filter((s) => s.at + s.ms >= from && s.at < to)
    },
    stop: async () => {
      worker.postMessage('stop')
      await stopped
      await worker.terminate()
    },
  }
}
