/**
 * Loaded into a server process by bench/stream-memory.ts (`node --expose-gc --import
 * ./bench/memory-probe.mjs src/main.ts`), never by the server itself. On SIGUSR2 it
 * reads the process's memory and writes one line to stderr:
 *
 *   memory-probe {"rss":…,"heapUsed":…,"external":…,"arrayBuffers":…,"gcRss":…,…}
 *
 * `rss` and `rssAnon` are read first, as they are (garbage included, as the turns bench reads
 * VmRSS); then the heap is collected in full (twice, a tick apart) and everything is read again
 * (`gc*`). When the file named by MEMORY_PROBE_SNAPSHOT exists, its content is a path: a heap
 * snapshot is written there after the collection, and the file is removed.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { writeHeapSnapshot } from 'node:v8'

const gc = globalThis.gc
if (typeof gc !== 'function') throw new Error('memory-probe: run the server with --expose-gc')

function statusKb(field) {
  const status = readFileSync('/proc/self/status', 'utf8')
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)
  return match ? Number(match[1]) * 1024 : Number.NaN
}

process.on('SIGUSR2', () => {
  const before = { rss: statusKb('VmRSS'), rssAnon: statusKb('RssAnon'), ...process.memoryUsage() }
  gc()
  setImmediate(() => {
    gc()
    const after = process.memoryUsage()
    const out = {
      rss: before.rss,
      rssAnon: before.rssAnon,
      heapUsed: before.heapUsed,
      heapTotal: before.heapTotal,
      gcRss: statusKb('VmRSS'),
      gcRssAnon: statusKb('RssAnon'),
      gcHeapUsed: after.heapUsed,
      gcHeapTotal: after.heapTotal,
      gcExternal: after.external,
      gcArrayBuffers: after.arrayBuffers,
    }
    const trigger = process.env.MEMORY_PROBE_SNAPSHOT
    if (trigger && existsSync(trigger)) {
      const path = readFileSync(trigger, 'utf8').trim()
      rmSync(trigger)
      writeHeapSnapshot(path)
      out.snapshot = path
    }
    process.stderr.write(`memory-probe ${JSON.stringify(out)}\n`)
  })
})
