/**
 * The read thread (src/store/read-thread.ts, docs/decisions/048-stalled-litefs.md): its own
 * read-only connection, holding a read transaction (a snapshot) between requests on the primary.
 *
 * While litefs answers, every request starts a fresh snapshot first (COMMIT, then BEGIN and a first
 * read), so it sees every commit made before it was asked, as a read on the main thread would. While
 * litefs does not answer (the watcher's shared state says so), starting a snapshot would wait for it:
 * the request is then answered from the snapshot held, but only if that snapshot is known to hold
 * everything the node has committed or acknowledged. Each snapshot is tagged with the main
 * connection's change count and the LiteFS position as they were just before it began; a request
 * carries them as they are now. Equal tags: nothing was written since (during a stall nothing can
 * commit), the snapshot is current. Otherwise the answer is `stale` and the caller answers 503.
 *
 * Litefs may stop between the watcher's looks: a thread that begins a renewal then waits in it for
 * as long as litefs is stopped. So there are two read threads, and one does not begin a renewal
 * while the other has been in one for longer than a renewal takes (`suspectAfterMs`): at least one
 * of them keeps a snapshot to answer from.
 */
import Database from 'better-sqlite3'
import { parentPort, workerData } from 'node:worker_threads'
import { historyPageJson, type HistoryPageQuery } from './history-page.ts'
import { createApiKeyStore } from './api-keys.ts'
import { createChatStore } from './chats.ts'
import { stalledFrom } from './litefs-watch.ts'
import { createPartStore } from './parts.ts'

export type ReadTag = { generation: number; changes: number; position: string }
export type ReadRequest =
  | { id: number; op: 'authenticate'; tag: ReadTag; secret: string }
  | { id: number; op: 'historyPage'; tag: ReadTag; orgId: string; chatId: string; query: HistoryPageQuery }
export type ReadAnswer = { id: number; ok: true; value: unknown; fromHeldSnapshot: boolean } | { id: number; ok: false; stale: boolean; message: string }

const { file, watchShared, tagShared, refreshingShared, busyShared, index, stallAfterMs, idleRefreshMs, suspectAfterMs } = workerData as {
  file: string
  watchShared: SharedArrayBuffer | null
  tagShared: SharedArrayBuffer
  /** One slot per read thread: when it began renewing its snapshot (ms since the epoch), 0 when it is not. */
  refreshingShared: SharedArrayBuffer
  /** One slot per read thread: when it began answering its current request, 0 when it is not. */
  busyShared: SharedArrayBuffer
  index: number
  stallAfterMs: number
  idleRefreshMs: number
  suspectAfterMs: number
}
const watch = watchShared ? new BigInt64Array(watchShared) : null
const tagNow = new BigInt64Array(tagShared)
const stalled = () => watch !== null && stalledFrom(watch, stallAfterMs) > 0
const refreshing = new BigInt64Array(refreshingShared)
/**
 * Another read thread has been renewing its snapshot for longer than a renewal takes: litefs has
 * probably just stopped, before the watcher could say so. Renewing here too would leave no thread
 * with a snapshot to answer from.
 */
const otherStuck = () => {
  const now = Date.now()
  for (let i = 0; i < refreshing.length; i++) {
    if (i === index) continue
    const began = Number(Atomics.load(refreshing, i))
    if (began !== 0 && now - began > suspectAfterMs) return true
  }
  return false
}

const db = new Database(file, { readonly: true, fileMustExist: true })
db.pragma('busy_timeout = 100')
const keys = createApiKeyStore(db)
const chats = createChatStore(db)
const parts = createPartStore(db)
const begin = db.prepare('BEGIN')
const commit = db.prepare('COMMIT')
const touch = db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1')

let held: ReadTag | null = null
let lastRefresh = 0
const sameTag = (a: ReadTag | null, b: ReadTag) => a !== null && a.generation === b.generation && a.changes === b.changes && a.position === b.position

function refresh(tag: ReadTag) {
  Atomics.store(refreshing, index, BigInt(Date.now()))
  try {
    held = null
    if (db.inTransaction) commit.run()
    begin.run()
    touch.get()
    held = tag
    lastRefresh = Date.now()
  } finally {
    Atomics.store(refreshing, index, 0n)
  }
}

/**
 * Only the primary's read threads hold a snapshot between requests. On a replica litefs applies
 * the primary's transactions under SQLite's locks, and a snapshot held there keeps it from ever
 * taking them: replication stopped (seen on the cluster test). There each request reads in a
 * transaction of its own, as the main thread did, and a stalled litefs answers 503.
 */
const holdSnapshots = () => Atomics.load(tagNow, 3) === 1n
const publishedTag = (): ReadTag => ({ generation: Number(tagNow[0]), changes: Number(tagNow[1]), position: String(tagNow[2]) })

function release() {
  held = null
  if (db.inTransaction) commit.run()
}

const busy = new BigInt64Array(busyShared)

function answer(request: ReadRequest): ReadAnswer {
  Atomics.store(busy, index, BigInt(Date.now()))
  try {
    return answerIn(request)
  } finally {
    if (!holdSnapshots()) release()
    Atomics.store(busy, index, 0n)
  }
}

function answerIn(request: ReadRequest): ReadAnswer {
  let fromHeldSnapshot = false
  if (stalled()) {
    if (sameTag(held, request.tag)) fromHeldSnapshot = true
    else return { id: request.id, ok: false, stale: true, message: 'litefs does not answer, and the snapshot held here is not known to hold every write of this node' }
  } else if (otherStuck() && sameTag(held, request.tag)) fromHeldSnapshot = true
  else refresh(request.tag)
  switch (request.op) {
    case 'authenticate':
      return { id: request.id, ok: true, value: keys.authenticate(request.secret), fromHeldSnapshot }
    case 'historyPage': {
      const chat = chats.get(request.orgId, request.chatId)
      return { id: request.id, ok: true, value: chat ? historyPageJson(parts, chat.id, request.query) : null, fromHeldSnapshot }
    }
  }
}

parentPort!.on('message', (request: ReadRequest | 'stop' | 'renew') => {
  // The WAL cycle (read-thread.ts): a snapshot taken now, at the log's end, tagged as published just
  // before; never while litefs is stalled or the other thread is caught renewing (it keeps its own).
  if (request === 'renew') {
    let renewed = false
    if (holdSnapshots() && !stalled() && !otherStuck()) {
      try {
        refresh(publishedTag())
        renewed = true
      } catch {
        held = null
      }
    }
    parentPort!.postMessage({ renewed, index })
    return
  }
  if (request === 'stop') {
    clearInterval(idle)
    if (db.inTransaction) commit.run()
    db.close()
    parentPort!.close()
    return
  }
  let reply: ReadAnswer
  try {
    reply = answer(request)
  } catch (error) {
    reply = { id: request.id, ok: false, stale: false, message: error instanceof Error ? error.message : String(error) }
  }
  parentPort!.postMessage(reply)
})

// A snapshot held for long keeps the WAL's frames after it from being checkpointed away: while
// litefs answers and no request came, it is renewed every `idleRefreshMs`, tagged with what the
// main thread last published (written before this refresh began, so the snapshot holds it).
const idle = setInterval(() => {
  // Demoted: the snapshot held as primary goes (litefs needs the locks to apply the new primary's transactions).
  if (!holdSnapshots()) {
    if (held !== null || db.inTransaction) {
      try {
        release()
      } catch {}
    }
    return
  }
  if (stalled() || otherStuck() || Date.now() - lastRefresh < idleRefreshMs) return
  try {
    refresh(publishedTag())
  } catch {
    held = null
  }
}, idleRefreshMs)
