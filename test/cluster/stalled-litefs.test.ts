import { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, test, type TestContext } from 'vitest'
import { waitFor } from '../e2e/server-process.ts'
import { postTurn, request, type TurnAnswer } from '../e2e/turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { assertClusterCanRun, percentile, sleep, startLitefsCluster, type ClusterNode, type LitefsCluster } from './litefs-cluster.ts'

/**
 * Issue 34, "The event loop never waits on storage", must-show: litefs is stopped (SIGSTOP) for
 * 5 s on the primary; `/healthz` and a history read on that node answer within 100 ms throughout
 * (docs/decisions/048-stalled-litefs.md). Then litefs goes on (SIGCONT) and the node recovers:
 * turns are admitted again and nothing committed is lost.
 *
 * Two nodes with a static lease, so the stop cannot move the primary (the issue's lease never
 * moved either): the test is about one node's event loop while its litefs does not answer.
 *
 * Runs under `npm run test:cluster` only.
 */
assertClusterCanRun()
const MODEL = 'sandbox/echo'
const STOP_MS = 5_000
/**
 * The issue's bound, and the only wall-clock comparison here: every answer during the stop comes
 * within 100 ms of being asked. It is measured on a thread of the test's own (the poller below), so
 * the test process's event loop does not add to it.
 */
const ANSWER_BOUND_MS = 100
const POLL_EVERY_MS = 20

type Sample = { target: string; at: number; ms: number; status: number; body: string; retryAfter: string | null }

// Plain JavaScript, on its own thread: asks each target every POLL_EVERY_MS, one request at a time
// per target, each over its own keep-alive connection; an answer not in within `abortMs` counts as
// status 0 with its full wait. A 5 ms tick notes when the poller's own loop ran more than 10 ms late
// (a 'tick' sample), so a poller held up is told apart from a server that is.
const POLLER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const http = require('node:http')
const now = () => performance.timeOrigin + performance.now()
let stopped = false
let batch = []
function ask(agent, target) {
  return new Promise((resolve) => {
    const at = now()
    const url = new URL(target.url)
    const req = http.get({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, headers: target.headers, timeout: workerData.abortMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ target: target.name, at, ms: now() - at, status: res.statusCode, body, retryAfter: res.headers['retry-after'] ?? null }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', (e) => resolve({ target: target.name, at, ms: now() - at, status: 0, body: String(e), retryAfter: null }))
  })
}
async function loop(target) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  while (!stopped) {
    const started = now()
    // Awaited before push: \`batch.push(await …)\` takes the array before the await, and a flush that
    // replaced it meanwhile would post the old one without this sample.
    const sample = await ask(agent, target)
    batch.push(sample)
    const wait = workerData.everyMs - (now() - started)
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  }
}
const flush = setInterval(() => { if (batch.length) { parentPort.postMessage(batch); batch = [] } }, 50)
parentPort.on('message', async (m) => {
  if (m !== 'stop') return
  stopped = true
  await running
  clearInterval(flush)
  parentPort.postMessage(batch)
  parentPort.postMessage('stopped')
})
const running = Promise.all(workerData.targets.map(loop))
{ let last = now(); setInterval(() => { const t = now(); if (t - last > 15) batch.push({ target: 'tick', at: last, ms: t - last - 5, status: 0, body: '', retryAfter: null }); last = t }, 5) }
`

function startPoller(targets: Array<{ name: string; url: string; headers?: Record<string, string> }>) {
  const samples: Sample[] = []
  const worker = new Worker(POLLER_SOURCE, { eval: true, workerData: { targets, everyMs: POLL_EVERY_MS, abortMs: STOP_MS * 3 } })
  let onStopped = () => {}
  const stopped = new Promise<void>((resolve) => (onStopped = resolve))
  worker.on('message', (m: Sample[] | 'stopped') => (m === 'stopped' ? onStopped() : samples.push(...m)))
  return {
    samples,
    async stop() {
      worker.postMessage('stop')
      await stopped
      await worker.terminate()
      return samples
    },
  }
}

const nowAbsolute = () => performance.timeOrigin + performance.now()

describe('a stalled litefs on the primary (issue 34)', () => {
  let cluster: LitefsCluster
  let key = ''
  let primary: ClusterNode
  const on = (node: ClusterNode, path: string, init: { method?: string; body?: unknown; timeoutMs?: number } = {}) =>
    request(node.url, path, { key, timeoutMs: 30_000, ...init })
  const dumpOnFailure = (context: TestContext) => context.onTestFailed(() => console.error(cluster.report(80)))

  beforeAll(async () => {
    cluster = await startLitefsCluster({ nodes: 2, lease: { type: 'static', primary: 0 } })
    try {
      await cluster.start()
      primary = await cluster.waitForPrimary()
      key = cluster.apiKey()
    } catch (error) {
      console.error(cluster.report(80))
      throw error
    }
  }, machineCeiling(300_000))

  afterAll(async () => {
    // Never leave litefs stopped: its mount would hang everything that touches it.
    if (primary?.process?.pid) {
      try {
        process.kill(primary.process.pid, 'SIGCONT')
      } catch {}
    }
    await cluster?.stop()
  }, 120_000)

  test('/healthz and history reads on the primary answer within 100 ms while its litefs is stopped for 5 s; then turns are admitted and nothing is lost', async (context) => {
    dumpOnFailure(context)
    const created = await on(primary, '/api/v1/chats', { method: 'POST', body: { title: 'stall' } })
    expect(created.status, created.text).toBe(201)
    const chat = created.json().id as string
    const turn = async (text: string): Promise<TurnAnswer> => postTurn(primary.url, key, chat, { model: MODEL, input: [{ type: 'prompt', text }] }, 120_000)
    const completed = async (answer: TurnAnswer) => {
      if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
      await answer.closed
      return answer.frames.at(-1)
    }
    // Two turns committed before the stop: the history the reads must keep serving.
    for (const text of ['before one', 'before two']) expect((await completed(await turn(text)))?.event).toBe('done')
    // A stream running through the stop: 30 words, one every 250 ms, so it streams before, during and after it.
    const running = await turn('/slow 250\n/long 30')
    if (!running.ok) throw new Error(`HTTP ${running.status}: ${running.text}`)
    await running.frame('a first delta', (f) => f.event === 'delta' || f.event.endsWith('.delta'), 30_000)
    const historyPath = `/api/v1/chats/${chat}/history?limit=100`
    const before = await on(primary, historyPath)
    expect(before.status, before.text).toBe(200)
    const committedBefore = before.json().data as Array<{ id: string; ordinal: number }>
    // Two turns' prompts and answers, and the running turn's prompt.
    expect(committedBefore.length).toBeGreaterThanOrEqual(5)

    if (process.env.STALL_DEBUG) console.log(`positions before the stop: ${cluster.nodes.map((n) => `${n.name} ${cluster.position(n)}`).join(', ')}`)
    const replica = cluster.nodes.find((n) => n !== primary)!
    const poller = startPoller([
      { name: 'healthz', url: `${primary.url}/healthz` },
      { name: 'history', url: `${primary.url}${historyPath}`, headers: { authorization: `Bearer ${key}` } },
      // The control: the replica's /healthz, whose litefs runs on. Late at the same moment as the
      // primary's answers, it says the machine's cores were busy elsewhere, not that storage held them.
      { name: 'control', url: `${replica.url}/healthz` },
    ])
    await sleep(500)
    const litefsPid = primary.process!.pid!
    const stoppedAt = nowAbsolute()
    process.kill(litefsPid, 'SIGSTOP')
    let resumedAt: number
    try {
      await sleep(STOP_MS)
    } finally {
      resumedAt = nowAbsolute()
      process.kill(litefsPid, 'SIGCONT')
    }
    await sleep(1_000)
    const samples = await poller.stop()

    // Every request asked while litefs was stopped, and every one still waiting when it stopped.
    const asked = samples.filter((s) => (s.target === 'healthz' || s.target === 'history') && s.at + s.ms >= stoppedAt && s.at < resumedAt)
    // The machine's cores busy with other work (this suite shares them): a request over the bound is
    // set aside when, taking off how late the poller's own loop ran while it was in flight (it was
    // timed by a clock that was not looking) or how long the control (the replica's /healthz) took
    // at the same moment, it is back within the bound. A request held by storage for seconds is not
    // excused by a busy moment. At most a twentieth of them may be set aside, or the measure is void
    // and the test fails.
    const pollerLate = samples.filter((s) => s.target === 'tick')
    const pollerLateDuring = (s: Sample) =>
      pollerLate.filter((t) => s.at < t.at + t.ms && t.at < s.at + s.ms).reduce((sum, t) => sum + t.ms, 0)
    const control = samples.filter((s) => s.target === 'control')
    const controlDuring = (s: Sample) => Math.max(0, ...control.filter((c) => s.at < c.at + c.ms && c.at < s.at + s.ms).map((c) => c.ms))
    const excusable = (s: Sample) => s.ms > ANSWER_BOUND_MS && s.ms - Math.max(pollerLateDuring(s), controlDuring(s)) <= ANSWER_BOUND_MS
    const during = asked.filter((s) => !excusable(s))
    const setAside = asked.length - during.length
    const report = (target: string) => {
      const of = during.filter((s) => s.target === target)
      const statuses = [...new Set(of.map((s) => s.status))]
      return `${target}: ${of.length} answers, statuses ${statuses.join('/')}, p50 ${percentile(of.map((s) => s.ms), 50).toFixed(1)} ms, worst ${Math.max(...of.map((s) => s.ms)).toFixed(1)} ms`
    }
    if (process.env.STALL_DEBUG) console.log(samples.filter((s) => s.at > stoppedAt - 200).map((s) => `${s.target} at ${Math.round(s.at - stoppedAt)} ms: ${s.status} after ${s.ms.toFixed(1)} ms`).join('\n'))
    console.log(
      `litefs stopped ${Math.round(resumedAt - stoppedAt)} ms on ${primary.name}: ${report('healthz')}; ${report('history')}; ` +
        `the poller's own loop late by more than 50 ms ${pollerLate.filter((t) => t.ms > 50).length} time(s), the control over ${ANSWER_BOUND_MS / 2} ms ${control.filter((c) => c.ms > ANSWER_BOUND_MS / 2).length} time(s); ${setAside} request(s) set aside`,
    )
    expect(setAside, "requests over the bound set aside as the machine's, not storage's").toBeLessThanOrEqual(asked.length / 20)
    const late = during.filter((s) => s.ms > ANSWER_BOUND_MS)
    expect(late.map((s) => `${s.target} asked ${Math.round(s.at - stoppedAt)} ms into the stop: ${s.status} after ${s.ms.toFixed(1)} ms`)).toEqual([])
    // At least one answer per 100 ms of the stop for each target: none was held up unseen.
    for (const target of ['healthz', 'history']) expect(during.filter((s) => s.target === target).length, target).toBeGreaterThanOrEqual(STOP_MS / ANSWER_BOUND_MS)
    for (const s of during.filter((x) => x.target === 'healthz')) expect({ status: s.status, body: JSON.parse(s.body) }).toEqual({ status: 200, body: { status: 'ok' } })
    // History: the committed parts, as before the stop.
    for (const s of during.filter((x) => x.target === 'history')) {
      expect(s.status, s.body).toBe(200)
      expect((JSON.parse(s.body).data as Array<{ id: string }>).map((p) => p.id)).toEqual(committedBefore.map((p) => p.id))
    }

    if (process.env.STALL_DEBUG) console.log(`positions after the stop: ${cluster.nodes.map((n) => `${n.name} ${cluster.position(n)}`).join(', ')}`)
    // The stream running through the stop ends as it would have without it.
    await running.closed
    const deltasDuring = running.frames.filter((f) => f.event !== 'run' && f.event !== 'done').length
    expect(running.frames.at(-1)?.event, JSON.stringify(running.frames.at(-1))).toBe('done')
    console.log(`the stream running through the stop ended with ${running.frames.at(-1)?.event} after ${deltasDuring} frames`)

    // Recovery: a turn is admitted and completes, and the ledger holds everything, in order.
    const after = await completed(await turn('after'))
    expect(after?.event).toBe('done')
    const history = await on(primary, historyPath)
    expect(history.status, history.text).toBe(200)
    const ids = (history.json().data as Array<{ id: string }>).map((p) => p.id)
    expect(ids.slice(0, committedBefore.length)).toEqual(committedBefore.map((p) => p.id))
    // The running turn's answer, and the turn after it (prompt and answer).
    expect(ids.length).toBeGreaterThanOrEqual(committedBefore.length + 3)
    // And the replica has it too.
    const txid = cluster.position(primary)!
    await waitFor(`the replica to reach the primary's position ${txid}`, () => (cluster.position(replica) ?? 0n) >= txid, 30_000).catch((error) => {
      throw new Error(`${(error as Error).message}: the replica is at ${cluster.position(replica)}`)
    })
    const onReplica = await on(replica, historyPath)
    expect((onReplica.json().data as Array<{ id: string }>).map((p) => p.id)).toEqual(ids)
  }, machineCeiling(120_000))
})
