/**
 * Does a read thread's held snapshot (decision 048) let the primary's WAL grow? On a plain file (the
 * WAL rules are SQLite's, the same in a LiteFS mount): the main connection commits a small write
 * every millisecond for DURATION_MS while the WAL checkpointer's thread runs as in the server, with
 * and without the read threads (asked for a history page every 20 ms). Reports the `-wal` file's
 * largest and last size.
 *
 *   PATH=/work/main/node_modules/.bin:$PATH node --import tsx bench/wal-held-snapshot.ts
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { startReadThread } from '../src/store/read-thread.ts'
import { SERVER_AUTOCHECKPOINT_PAGES, startWalCheckpointer } from '../src/store/wal-checkpointer.ts'
import { writeHold } from '../src/store/storage-stall.ts'

/** How long each of the WAL cycle's write holds lasted (ms). */
const holds: number[] = []
const take = writeHold.take
writeHold.take = () => {
  const at = performance.now()
  const release = take()
  return () => {
    holds.push(performance.now() - at)
    release()
  }
}

const DURATION_MS = Number(process.env.DURATION_MS ?? 10_000)
const WRITE_EVERY_MS = Number(process.env.WRITE_EVERY_MS ?? 1)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function run(withReads: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-wal-'))
  const file = join(dir, 'parley.db')
  const db = openDatabase(file, { autocheckpointPages: SERVER_AUTOCHECKPOINT_PAGES })
  const store = createStore(db)
  const org = store.organisations.create('WAL', 'wal')
  const chat = store.chats.create({ orgId: org.id, namespace: null, title: null, description: null, userMetadata: {} })
  const checkpointer = startWalCheckpointer(file, () => {})
  const reads = withReads ? startReadThread(file, () => db, () => true, null, () => checkpointer.checkpointNow()) : null
  if (reads) await reads.historyPage(org.id, chat.id, {})
  let largest = 0
  let writes = 0
  let readsDone = 0
  const until = Date.now() + DURATION_MS
  const reader = (async () => {
    while (reads && Date.now() < until) {
      await reads.historyPage(org.id, chat.id, { limit: 20 })
      readsDone++
      await sleep(20)
    }
  })()
  while (Date.now() < until) {
    // Through the write queue, as the server's writes go: the WAL cycle holds it for a moment.
    await store.writes.write(() => store.parts.append(chat.id, [{ body: { type: 'prompt', text: `write ${writes}` } as never }]))
    writes++
    if (writes % 50 === 0) largest = Math.max(largest, statSync(`${file}-wal`).size)
    await sleep(WRITE_EVERY_MS)
  }
  await reader
  const last = statSync(`${file}-wal`).size
  await reads?.stop()
  await checkpointer.stop()
  db.close()
  rmSync(dir, { recursive: true, force: true })
  const held = holds.splice(0).sort((a, b) => a - b)
  const holdMs = held.length ? { cycles: held.length, p50: +held[held.length >> 1]!.toFixed(2), max: +held.at(-1)!.toFixed(2) } : null
  return { withReads, writes, reads: readsDone, largestWalKiB: Math.round(largest / 1024), lastWalKiB: Math.round(last / 1024), writeHoldMs: holdMs }
}

// The threads are unref()ed, as in the server (whose listening socket keeps it alive): this does here.
const keepAlive = setInterval(() => {}, 1_000)
for (const withReads of (process.env.WAL_RUNS ?? "false,true,false,true").split(",").map((s) => s === "true")) console.log(JSON.stringify(await run(withReads)))
clearInterval(keepAlive)
process.exit(0)
