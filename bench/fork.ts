/**
 * `npm run bench -- fork` (issue 24): what a fork costs beside the floor, a raw bulk copy of the same
 * rows. For a source chat of 1k, 10k and 100k parts (one in 100 with an attachment, a block summary
 * every 50 parts), each round times `store.forks.fork` of the whole ledger (the chat row, parts,
 * part_media, summaries, inherited runs, pending calls: one transaction, src/store/fork-chat.ts)
 * and, in the same process on the same file, a raw `INSERT … SELECT` of the source's parts into
 * another chat (one transaction). Reported: the median of each and their ratio. The aim: the ratio
 * does not grow with the source's length.
 *
 * Environment: BENCH_ITERATIONS (rounds per size, default 5).
 */
import { join } from 'node:path'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { REPO_ROOT } from '../test/e2e/server-process.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import type { NewPart } from '../src/store/parts.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 5))
const SIZES = [1_000, 10_000, 100_000]
const { removeLater, cleanup } = installCleanup()

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

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
  const figures: Array<{ parts: number; forkMs: number; floorMs: number; ratio: number }> = []
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
    for (let round = 0; round < ROUNDS; round++) {
      let t = process.hrtime.bigint()
      const fork = store.forks.fork({ orgId: org, sourceChatId: source, upTo: written.at(-1)!.ordinal, title: null, description: null, userMetadata: {} })!
      forkMs.push(Number(process.hrtime.bigint() - t) / 1e6)
      if (fork.part_count !== size) throw new Error(`fork copied ${fork.part_count} of ${size} parts`)
      const target = store.chats.create({ orgId: org, namespace: 'bench', title: null, description: null, userMetadata: {} }).id
      t = process.hrtime.bigint()
      db.transaction(() => rawCopy.run({ target, source }))()
      floorMs.push(Number(process.hrtime.bigint() - t) / 1e6)
      // Neither copy stays: the next round copies into a ledger of the same size.
      store.chats.deleteById(fork.id)
      store.chats.deleteById(target)
    }
    const f = median(forkMs)
    const r = median(floorMs)
    figures.push({ parts: size, forkMs: f, floorMs: r, ratio: f / r })
    rows.push(`| ${size.toLocaleString('en')} | ${fmt(f)} ms | ${fmt(r)} ms | ${(f / r).toFixed(2)} | ${fmt((f * 1000) / size)} µs |`)
    log(`fork of ${size} parts: ${fmt(f)} ms, floor ${fmt(r)} ms, ratio ${(f / r).toFixed(2)}`)
  }
  db.close()
  const section = [
    ...sectionHead('Fork: copying a chat beside a raw bulk copy', 'bench/fork.ts', loadBefore),
    `- **Load**: one process, one SQLite file. A source chat of N parts (1 in 100 with an attachment, a summary every 50 parts); each of ${ROUNDS} rounds forks the whole ledger through \`store.forks.fork\` (one transaction: chat row, parts, part_media, summaries, inherited runs, pending calls) and then copies the same parts with a raw \`INSERT … SELECT\` (the floor). Medians. Aim: the ratio does not grow with N.`,
    '',
    '| Parts | Fork | Raw INSERT … SELECT | Ratio | Fork per part |',
    '|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'fork', section)
  log(JSON.stringify(figures))
}

runMain(main, cleanup)
