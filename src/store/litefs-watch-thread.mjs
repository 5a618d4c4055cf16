// The LiteFS watcher's thread (src/store/litefs-watch.ts): plain JavaScript, it needs nothing of
// the project. It reads LiteFS's `.primary`, `.lag` and the database's `-pos` file every
// `intervalMs`, and says when each look began and ended in shared memory, so that a look still
// unanswered (litefs stopped or stuck: the read waits in the kernel, in FUSE's
// request_wait_answer) is seen by every other thread as a stalled storage, without any of them
// touching the mount. What it read goes to the main thread as a message when it changes.
import { parentPort, workerData } from 'node:worker_threads'
import { readFileSync } from 'node:fs'

const { primaryFile, lagFile, positionFile, intervalMs, shared } = workerData
// [0] when the current look began (ms since the epoch; 0: none under way), [1] when the last one ended,
// [2] the position's TXID (-1: none).
const state = new BigInt64Array(shared)

const readIfThere = (file) => {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if (error && error.code === 'ENOENT') return null
    return `\u0000error:${error && error.code}`
  }
}
const txidOf = (content) => {
  const match = content === null ? null : /^([0-9a-f]{16})\//i.exec(content.trim())
  return match ? BigInt(`0x${match[1]}`) : -1n
}

let last = ''
let stopped = false
function look() {
  if (stopped) return
  Atomics.store(state, 0, BigInt(Date.now()))
  const primary = readIfThere(primaryFile)
  const lag = primary === null ? readIfThere(lagFile) : null
  const position = txidOf(readIfThere(positionFile))
  Atomics.store(state, 2, position)
  Atomics.store(state, 1, BigInt(Date.now()))
  Atomics.store(state, 0, 0n)
  const seen = JSON.stringify([primary, lag])
  if (seen !== last) {
    last = seen
    parentPort.postMessage({ primary, lag })
  }
  setTimeout(look, intervalMs)
}
parentPort.on('message', (message) => {
  if (message === 'stop') {
    stopped = true
    parentPort.close()
  }
})
look()
