/**
 * `npm run bench -- shutdown`: how long `app.close()` takes (decision 009, "Graceful shutdown") with
 * 50 connections whose request was answered before its body was read (a 401 to a POST that declared
 * 100 kB and sent 10 bytes; each client keeps its connection and sends nothing more), beside the
 * floor measured in the same run: `app.close()` with 50 idle keep-alive connections, which Node
 * closes itself. Before src/http/app.ts destroyed the answered connections on close, the first case
 * waited for the clients (30 s and more; the shutdown's 5 s bound hid it).
 *
 * Environment: BENCH_ITERATIONS (rounds per case, default 5).
 */
import { fixedCatalogue } from '../src/providers/catalogue/catalogue-service.ts'
import { mkdtempSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { composeApp } from '../src/compose.ts'
import { buildApp } from '../src/http/app.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { REPO_ROOT } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 5))
const CONNECTIONS = 50
const { removeLater, cleanup } = installCleanup()
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** A listening app over a fresh database. */
async function listeningApp() {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-shutdown-'))
  removeLater(dir)
  const db = openDatabase(join(dir, 'parley.db'))
  const deps = composeApp({
    store: createStore(db),
    catalogue: fixedCatalogue([]),
    allModels: [],
    env: { NODE_ID: 'bench-node' },
    build: { version: '0.0.0-bench', commit: 'bench' },
  })
  const app = await buildApp(deps)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  return { app, port, close: () => (deps.host.stopAll(), db.close()) }
}

/** Opens a connection, sends `request`, and resolves once the answer's head has come back. */
function answered(port: number, request: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    socket.on('error', reject)
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      if (received.includes('\r\n\r\n')) resolve(socket)
    })
  })
}

const DISCARDED = 'POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"title":"xxxxxxxxxx'
const IDLE = 'GET /api/v1/version HTTP/1.1\r\nHost: localhost\r\n\r\n'

async function closeMs(request: string): Promise<number> {
  const { app, port, close } = await listeningApp()
  const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => answered(port, request)))
  const started = performance.now()
  await app.close()
  const ms = performance.now() - started
  for (const socket of sockets) socket.destroy()
  close()
  return ms
}

async function main() {
  const loadBefore = loadLine()
  const idle: number[] = []
  const discarded: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    idle.push(await closeMs(IDLE))
    discarded.push(await closeMs(DISCARDED))
    log(`round ${round + 1}/${ROUNDS}: idle ${fmt(idle.at(-1)!, 2)} ms, discarded bodies ${fmt(discarded.at(-1)!, 2)} ms`)
  }
  const section = [
    ...sectionHead('Shutdown: closing with connections whose body was never read', 'bench/shutdown.ts', loadBefore),
    '',
    `${CONNECTIONS} connections each, ${ROUNDS} rounds, median of \`app.close()\`:`,
    '',
    '| Connections held open by their clients | `app.close()` | Ratio to the floor |',
    '|---|--:|--:|',
    `| idle keep-alive, answered (the floor) | ${fmt(median(idle), 2)} ms | 1.00 |`,
    `| answered 401 before the declared body was read | ${fmt(median(discarded), 2)} ms | ${fmt(median(discarded) / median(idle), 2)} |`,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'shutdown', section)
}

runMain(main, cleanup)
