// The WAL checkpointer's thread (src/store/wal-checkpointer.ts): plain JavaScript, since it needs
// nothing of the project but the database file. It copies the write-ahead log back into the
// database file on its own connection, so the copy never runs on the server's event loop.
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'

const { file, intervalMs } = workerData
const db = new Database(file, { fileMustExist: true })
// Nobody waits on this thread: it may wait for a lock as long as a tick lasts.
db.pragma(`busy_timeout = ${intervalMs}`)

const checkpoint = () => {
  try {
    // PASSIVE: copies what no reader still needs, never blocks a writer, and is cheap when the
    // log holds nothing new.
    db.pragma('wal_checkpoint(PASSIVE)')
  } catch (error) {
    parentPort.postMessage({ kind: 'failed', message: error instanceof Error ? error.message : String(error) })
  }
}

const timer = setInterval(checkpoint, intervalMs)
parentPort.on('message', (message) => {
  // Asked by the read threads' WAL cycle (src/store/read-thread.ts): whether every frame of the log is
  // now in the database file, so the next write may start the log again from its beginning.
  if (message?.kind === 'checkpoint-now') {
    let complete = false
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)')
      complete = result.busy === 0 && result.log === result.checkpointed
    } catch (error) {
      parentPort.postMessage({ kind: 'failed', message: error instanceof Error ? error.message : String(error) })
    }
    parentPort.postMessage({ kind: 'checkpointed', id: message.id, complete })
    return
  }
  if (message !== 'stop') return
  clearInterval(timer)
  checkpoint()
  db.close()
  parentPort.close()
})
