/**
 * `npm run bench -- fork` (issue 24): what a fork costs beside the floor, a raw bulk copy of the same
 * rows. For a source chat of 1k, 10k and 100k parts (one in 100 with an attachment, a block summary
 * every 50 parts), each round times `store.forks.fork` of the whole ledger (the chat row, parts,
 * part_media, summaries, inherited runs, pending calls: one transaction, src/store/fork-chat.ts)
 * and, in the same process on the same file, a raw `INSERT … SELECT` of the source's parts into
 * another chat (one transaction). Reported: the median of each and their ratio. The aim: the ratio
 * does not grow with the source's length. Each round also forks through the server's path, the fork
 * copier's thread (src/store/fork-copier.ts), and records the longest the event loop went without
 * a turn meanwhile: the aim there is a few milliseconds, whatever the length.
 *
 * Environment: BENCH_ITERATIONS (rounds per size, default 5).
 */
import { join } from 'node:path'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { REPO_ROOT } from '../test/e2e/server-process.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { forkCopier } from '../src/store/fork-copier.ts'
import type { NewPart } from '../src/store/parts.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 5))
const SIZES = [1_000, 10_000, 100_000]
const { removeLater, cleanup } = installCleanup()

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Runs `work`, turning the event loop by setImmediate meanwhile: its time, and the longest gap between two turns. */
async function timedWithLoopGap<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; gapMs: number }> {
  let last = process.hrtime.bigint()
  let gap = 0n
  let done = false
  const turn = () => {
    const now = process.hrtime.bigint()
    if (now - last > gap) gap = now - last
    last = now
    if (!done) setImmediate(turn)
  }
  const start = process.hrtime.bigint()
  setImmediate(turn)
  const value = await work()
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  done = true
  turn()
  return { value, ms, gapMs: Number(gap) / 1e6 }
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-fork-'))
  removeLater(dir)
  const db = openDatabase(join(dir, 'parley.db'))
  const store = createStore(db)
  const org = store.organisations.create('Benchmark', 'bench').id
  const rawCopy = db.prepare(
    `INSERT INTO parts (chat_id, id, run_id, kind, body, user_metadata, created_at, tokens)
     SELECT @target, @target || ordinal, run_id, kind, body, user_metadata, created_at, tokens FROM parts WHERE chat_id = @source ORDER BY ordinal`,
  )
  const rows: string[] = []
  const figures: Array<{ parts: number; forkMs: number; floorMs: number; ratio: number; threadMs: number; loopGapMs: number }> = []
  for (const size of SIZES) {
    const source = store.chats.create({ orgId: org, namespace: 'bench', title: null, description: null, userMetadata: {} }).id
    const batch: NewPart[] = []
    for (let i = 0; i < size; i++) {
      const text = `part ${i}: harbour lantern estuary kingfisher driftwood willowherb cobblestone nightingale`
      batch.push({
        body: i % 2 === 0 ? { type: 'prompt', text } : { type: 'message', text },
        tokens: 20,
        runId: `run-${Math.floor(i / 2)}`,
        ...(i % 100 === 0 ? { media: [{ mime: 'text/plain', bytes: Buffer.from(`attachment ${i % 1000}`), filename: 'a.txt', width: null, height: null, page_count: null }] as never } : {}),
      })
    }
    const written = store.parts.append(source, batch)
    db.transaction(() => {
      for (let i = 0; i + 50 <= written.length; i += 50) {
        store.summaries.insert(source, { firstOrdinal: written[i]!.ordinal, lastOrdinal: written[i + 49]!.ordinal, text: `summary ${i}`, tokens: 30, runId: 'compaction' }, new Date().toISOString())
      }
    })()
    const forkMs: number[] = []
    const floorMs: number[] = []
    const threadMs: number[] = []
    const loopGapMs: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      let t = process.hrtime.bigint()
      const fork = store.forks.fork({ orgId: org, sourceChatId: source, upTo: written.at(-1)!.ordinal, title: null, description: null, userMetadata: {} })!
      forkMs.push(Number(process.hrtime.bigint() - t) / 1e6)
      if (fork.part_count !== size) throw new Error(`fork copied ${fork.part_count} of ${size} parts`)
      const target = store.chats.create({ orgId: org, namespace: 'bench', title: null, description: null, userMetadata: {} }).id
      t = process.hrtime.bigint()
      db.transaction(() => rawCopy.run({ target, source }))()
      floorMs.push(Number(process.hrtime.bigint() - t) / 1e6)
      const labels = { title: null, description: null, userMetadata: {} }
      const threaded = await timedWithLoopGap(() => forkCopier.copy(db.name, { orgId: org, sourceChatId: source, upTo: written.at(-1)!.ordinal, ...labels }, new Date()))
      if (threaded.value?.part_count !== size) throw new Error(`the copier's fork copied ${threaded.value?.part_count} of ${size} parts`)
      threadMs.push(threaded.ms)
      loopGapMs.push(threaded.gapMs)
      // No copy stays: the next round copies into a ledger of the same size.
      store.chats.deleteById(fork.id)
      store.chats.deleteById(target)
      store.chats.deleteById(threaded.value.id)
    }
    const f = median(forkMs)
    const r = median(floorMs)
    const th = median(threadMs)
    const gap = Math.max(...loopGapMs)
    figures.push({ parts: size, forkMs: f, floorMs: r, ratio: f / r, threadMs: th, loopGapMs: gap })
    rows.push(`| ${size.toLocaleString('en')} | ${fmt(f)} ms | ${fmt(r)} ms | ${(f / r).toFixed(2)} | ${fmt((f * 1000) / size)} µs | ${fmt(th)} ms | ${fmt(gap, 1)} ms |`)
    log(`fork of ${size} parts: ${fmt(f)} ms, floor ${fmt(r)} ms, ratio ${(f / r).toFixed(2)}; on the thread ${fmt(th)} ms, longest loop gap ${fmt(gap, 1)} ms`)
  }
  db.close()
  await forkCopier.stop()
  const section = [
    ...sectionHead('Fork: copying a chat beside a raw bulk copy', 'bench/fork.ts', loadBefore),
    `- **Load**: one process, one SQLite file. A source chat of N parts (1 in 100 with an attachment, a summary every 50 parts); each of ${ROUNDS} rounds forks the whole ledger through \`store.forks.fork\` (one transaction: chat row, parts, part_media, summaries, inherited runs, pending calls) and then copies the same parts with a raw \`INSERT … SELECT\` (the floor). Medians. Aim: the ratio does not grow with N.`,
    `  Then the same fork as the server makes it, on the fork copier's thread (\`forkCopier.copy\`, src/store/fork-copier.ts: its own connection, the thread started by the first round): its time (median, the message round trip and the connection included) and the longest the event loop went without a turn meanwhile (worst of the rounds). Aim: a few milliseconds, whatever N.`,
    '',
    '| Parts | Fork | Raw INSERT … SELECT | Ratio | Fork per part | Fork on the copier thread | Longest event-loop gap meanwhile |',
    '|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'fork', section)
  log(JSON.stringify(figures))
}

runMain(main, cleanup)
