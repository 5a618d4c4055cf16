// What blocks while the primary's litefs is stopped (issue 34, decision 048)? Mounts one real
// LiteFS (static lease: it is the primary at once, no exec), makes a WAL database in the mount the
// way Parley does, then for each probe: SIGSTOP litefs, run the probe on a worker thread of its own
// (so a probe stuck in the kernel blocks only that thread), wait up to STOP_MS, SIGCONT, and report
// how long the probe took and whether it finished while litefs was stopped.
//
//   PATH=/work/main/node_modules/.bin:$PATH node bench/litefs-stall-probe.mjs
//
// Needs root, /dev/fuse, fusermount3 and litefs 0.5.14 (as test/cluster). Plain JavaScript: no tsx.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'

const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
const STOP_MS = Number(process.env.STOP_MS ?? 1500)
const litefsBin = process.env.LITEFS ?? (existsSync('/root/go/bin/litefs') ? '/root/go/bin/litefs' : 'litefs')

const freePort = () => new Promise((resolve) => { const srv = createServer(); srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)) }) })
const port = await freePort()
const dir = mkdtempSync(join(tmpdir(), 'litefs-stall-probe-'))
const fuse = join(dir, 'fuse')
const data = join(dir, 'data')
mkdirSync(fuse); mkdirSync(data)
const config = join(dir, 'litefs.yml')
writeFileSync(config, [
  'fuse:', `  dir: "${fuse}"`, 'data:', `  dir: "${data}"`, 'exit-on-error: false', 'http:', `  addr: "127.0.0.1:${port}"`,
  'lease:', '  type: "static"', '  hostname: "127.0.0.1:1"', `  advertise-url: "http://127.0.0.1:${port}"`, '  candidate: true', '',
].join('\n'))
const litefs = spawn(litefsBin, ['mount', '-config', config], { stdio: ['ignore', 'ignore', process.env.LITEFS_LOG ? 'inherit' : 'ignore'], detached: true })
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const cleanup = () => {
  try { process.kill(litefs.pid, 'SIGCONT') } catch {}
  try { process.kill(litefs.pid, 'SIGKILL') } catch {}
  spawnSync('fusermount3', ['-u', '-z', fuse])
  rmSync(dir, { recursive: true, force: true })
}
process.on('exit', cleanup)
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1))
for (let i = 0; i < 100 && !existsSync(join(fuse, '.lag')); i++) await sleep(100)
if (!existsSync(join(fuse, '.lag'))) throw new Error(`litefs did not mount ${fuse}`)
await sleep(300)

const file = join(fuse, 'parley.db')
{
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.exec('CREATE TABLE IF NOT EXISTS parts (id INTEGER PRIMARY KEY, chat TEXT, body TEXT)')
  const ins = db.prepare('INSERT INTO parts (chat, body) VALUES (?, ?)')
  db.transaction(() => { for (let i = 0; i < 2000; i++) ins.run(`c${i % 20}`, 'x'.repeat(200)) })()
  db.exec("CREATE TABLE IF NOT EXISTS other (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO other (body) VALUES ('written by another connection')")
  db.close()
}

// Each probe: `setup` runs on the worker before litefs stops (opens connections, warms caches);
// `probe` runs while it is stopped. Both are function bodies given `Database`, `file`, `fuse`, `fs`.
const probes = [
  ['stat of the mount directory (fs.statSync(fuse))', '', 'fs.statSync(fuse)'],
  ['stat of the database file', '', "fs.statSync(fuse + '/parley.db')"],
  ['readFileSync(.primary) (absent on the primary)', '', "try { fs.readFileSync(fuse + '/.primary') } catch {}"],
  ['readFileSync(.lag)', '', "fs.readFileSync(fuse + '/.lag', 'utf8')"],
  ['readFileSync(parley.db-pos)', "fs.readFileSync(fuse + '/parley.db-pos', 'utf8')", "fs.readFileSync(fuse + '/parley.db-pos', 'utf8')"],
  ['pread of the db file on an open fd, page already cached', "globalThis.fd = fs.openSync(fuse + '/parley.db', 'r'); fs.readSync(fd, Buffer.alloc(4096), 0, 4096, 0)", 'fs.readSync(fd, Buffer.alloc(4096), 0, 4096, 0)'],
  ['SELECT on an open, warmed connection (read transaction)', "globalThis.db = new Database(file); db.pragma('busy_timeout = 20'); db.prepare('SELECT count(*) FROM parts').get()", "db.prepare('SELECT count(*) FROM parts WHERE chat = ?').get('c3')"],
  ['SELECT on an open read-only connection', "globalThis.db = new Database(file, { readonly: true }); db.prepare('SELECT count(*) FROM parts').get()", "db.prepare('SELECT count(*) FROM parts WHERE chat = ?').get('c3')"],
  ['SELECT inside a read transaction already begun (snapshot held)', "globalThis.db = new Database(file); db.prepare('BEGIN').run(); db.prepare('SELECT count(*) FROM parts').get()", "db.prepare('SELECT count(*) FROM parts WHERE chat = ?').get('c3')"],
  ['SELECT in a held read transaction, of a table this connection never read', "globalThis.db = new Database(file); db.prepare('BEGIN').run(); db.prepare('SELECT count(*) FROM parts').get()", "db.prepare('SELECT count(*) FROM other').get()"],
  ['SELECT total_changes() (no table: no lock)', "globalThis.db = new Database(file); db.prepare('SELECT 1 FROM parts').get()", "db.prepare('SELECT total_changes()').pluck().get()"],
  ['COMMIT of a read transaction (releases its locks)', "globalThis.db = new Database(file); db.prepare('BEGIN').run(); db.prepare('SELECT count(*) FROM parts').get()", "db.prepare('COMMIT').run()"],
  ['open a new connection', '', 'new Database(file)'],
  ['BEGIN IMMEDIATE (no write yet)', "globalThis.db = new Database(file); db.pragma('busy_timeout = 20'); db.prepare('SELECT 1 FROM parts').get()", "db.prepare('BEGIN IMMEDIATE').run()"],
  ['INSERT (autocommit)', "globalThis.db = new Database(file); db.pragma('busy_timeout = 20'); db.prepare('SELECT 1 FROM parts').get()", "db.prepare('INSERT INTO parts (chat, body) VALUES (?, ?)').run('c1', 'y')"],
  ['PRAGMA data_version on an open connection', "globalThis.db = new Database(file); db.pragma('data_version')", "db.pragma('data_version')"],
  ['wal_checkpoint(PASSIVE)', "globalThis.db = new Database(file); db.pragma('busy_timeout = 20')", "db.pragma('wal_checkpoint(PASSIVE)')"],
  ['fs.promises.readFile(.lag) (libuv thread pool)', '', "await fs.promises.readFile(fuse + '/.lag', 'utf8')"],
]

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const Database = require(workerData.sqlite)
const { file, fuse } = workerData
const AsyncFunction = (async () => {}).constructor
parentPort.once('message', async (m) => {
  const setup = new AsyncFunction('Database', 'file', 'fuse', 'fs', workerData.setup)
  const probe = new AsyncFunction('Database', 'file', 'fuse', 'fs', workerData.probe)
  try { await setup(Database, file, fuse, fs) } catch (e) { parentPort.postMessage({ setupError: String(e) }); return }
  parentPort.postMessage('ready')
  parentPort.once('message', async () => {
    const t0 = performance.now()
    let error = null
    try { await probe(Database, file, fuse, fs) } catch (e) { error = e.code ? e.code + ': ' + e.message : String(e) }
    parentPort.postMessage({ ms: performance.now() - t0, error })
  })
})
`

const results = []
for (const [name, setup, probe] of probes) {
  const worker = new Worker(WORKER, { eval: true, workerData: { sqlite: require.resolve('better-sqlite3'), file, fuse, setup, probe } })
  const message = () => new Promise((resolve) => worker.once('message', resolve))
  worker.postMessage('setup')
  const ready = await message()
  if (ready !== 'ready') { results.push({ name, error: `setup failed: ${ready.setupError}` }); await worker.terminate(); continue }
  process.kill(litefs.pid, 'SIGSTOP')
  const stoppedAt = performance.now()
  await sleep(20)
  worker.postMessage('go')
  const done = message()
  const during = await Promise.race([done, sleep(STOP_MS).then(() => null)])
  const stoppedFor = performance.now() - stoppedAt
  // Which kernel wait the worker's thread is in, while litefs is still stopped.
  let wchan = ''
  if (during === null) {
    const waits = new Set()
    for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
      try { const w = readFileSync(`/proc/${process.pid}/task/${tid}/wchan`, 'utf8'); if (/fuse|request_wait|lock/.test(w)) waits.add(w) } catch {}
    }
    wchan = [...waits].join(',')
  }
  process.kill(litefs.pid, 'SIGCONT')
  const after = during ?? await done
  results.push({ name, blocked: during === null, ms: Math.round(after.ms * 10) / 10, error: after.error, stoppedMs: Math.round(stoppedFor), wchan })
  console.log(`${during === null ? 'BLOCKED' : 'ok     '} ${String(Math.round(after.ms * 10) / 10).padStart(7)} ms  ${name}${after.error ? `  (${after.error})` : ''}${wchan ? `  [thread waits in ${wchan}]` : ''}`)
  await worker.terminate()
  await sleep(200)
}
process.exit(0)
