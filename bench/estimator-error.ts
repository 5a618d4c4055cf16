/**
 * `npm run bench -- estimator-error`: how far the estimator is from the exact count, per content class
 * (issue 33, item 3; decision 042). For each class (test/helpers/content-classes.ts: English prose,
 * code, JSON, base64, JSON records with base64 thumbnails, one 3,000-character base64 blob in prose,
 * Chinese), texts of several lengths from seeded random places, each estimated (`estimateTokens`) and
 * counted exactly with o200k_base and cl100k_base (gpt-tokenizer, whole texts, nothing chunked). Then
 * the issue's own case: one 3,000-character base64 blob at 200 places in 60,000 characters of prose.
 *
 * Reported: estimate ÷ exact o200k (the lowest is what a margin must cover), and cl100k ÷ o200k (how
 * far two vendors' public tokenizers are apart on the same text).
 *
 * Environment: BENCH_SAMPLES (texts a class and length, default 12).
 */
import { join } from 'node:path'
import { estimateTokens, EXACT_MAX_CHARS } from '../src/domain/tokens/estimate-tokens.ts'
import { base64InProse, CONTENT_CLASSES, exactCl100k, exactO200k, seededRandom, textOfClass, type ContentClass } from '../test/helpers/content-classes.ts'
import { REPO_ROOT } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead } from './lib.ts'

const SAMPLES = Math.max(1, Math.trunc(envNumber('BENCH_SAMPLES', 12)))
/** Below EXACT_MAX_CHARS the estimate is the exact count; the lengths past it are where sampling decides. */
const LENGTHS = [3_000, 8_000, 30_000, 100_000]
const PLACEMENTS = 200

type Ratios = { estimate: number[]; cl100k: number[]; perChar: number[] }

const summary = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { min: sorted[0]!, median: sorted[Math.floor(sorted.length / 2)]!, max: sorted.at(-1)! }
}

function measure(text: string, into: Ratios) {
  const exact = exactO200k(text)
  into.estimate.push(estimateTokens(text) / exact)
  into.cl100k.push(exactCl100k(text) / exact)
  into.perChar.push(exact / text.length)
}

async function main() {
  const loadBefore = loadLine()
  const rows: string[] = []
  const worst: Record<string, number> = {}
  for (const [k, kind] of CONTENT_CLASSES.entries()) {
    const all: Ratios = { estimate: [], cl100k: [], perChar: [] }
    const long: Ratios = { estimate: [], cl100k: [], perChar: [] }
    for (const [l, length] of LENGTHS.entries()) {
      const random = seededRandom(1 + k * 1000 + l * 100)
      for (let s = 0; s < SAMPLES; s++) {
        const text = textOfClass(kind as ContentClass, length, random)
        measure(text, all)
        if (text.length > EXACT_MAX_CHARS) measure(text, long)
      }
    }
    const e = summary(long.estimate)
    const c = summary(all.cl100k)
    const p = summary(all.perChar)
    worst[kind] = e.min
    rows.push(
      `| ${kind} | ${all.estimate.length} | ${fmt(e.min, 3)} | ${fmt(e.median, 3)} | ${fmt(e.max, 3)} | ${long.estimate.filter((r) => r < 1).length} of ${long.estimate.length} | ${fmt(c.min, 3)}–${fmt(c.max, 3)} | ${fmt(p.min, 3)}–${fmt(p.max, 3)} |`,
    )
    log(rows.at(-1)!)
  }

  // The case: one 3,000-character base64 blob at 200 places in 60,000 characters of prose.
  const placed: number[] = []
  const random = seededRandom(33)
  for (let i = 0; i < PLACEMENTS; i++) {
    const text = base64InProse(60_000, 3_000, random)
    placed.push(estimateTokens(text) / exactO200k(text))
  }
  const pl = summary(placed)
  const below09 = placed.filter((r) => r < 0.9).length
  const below1 = placed.filter((r) => r < 1).length
  const placedLine = `one 3,000-character base64 blob at ${PLACEMENTS} places in 60,000 characters of prose: estimate ÷ exact o200k ${fmt(pl.min, 3)} (lowest), ${fmt(pl.median, 3)} (median), ${fmt(pl.max, 3)} (highest); below 0.9 in ${below09}, below 1 in ${below1} of ${PLACEMENTS}`
  log(placedLine)

  const table = [
    '| class | texts | estimate ÷ o200k, lowest | median | highest | under the exact count | cl100k ÷ o200k | o200k tokens a character |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
  process.stdout.write(`${table}\n\n${placedLine}\n`)
  const section = [
    ...sectionHead('Estimator error by content class (issue 33)', 'bench/estimator-error.ts', loadBefore),
    `- **Texts**: per class ${SAMPLES} texts of each of ${LENGTHS.map((n) => fmt(n)).join(', ')} UTF-16 units from seeded random places`,
    '  (test/helpers/content-classes.ts: prose from docs/decisions without code blocks or tables, code from src/, JSON from the',
    '  catalogue and the lockfile, base64 of random bytes, JSON records with 600–4,000-byte base64 thumbnails, one base64',
    '  blob of up to 3,000 characters between two words of prose, Chinese from the TypeScript compiler\'s zh-cn messages).',
    `- **Estimate ÷ o200k** is over the texts past ${fmt(EXACT_MAX_CHARS)} units (shorter ones are counted exactly); the exact counts are`,
    '  gpt-tokenizer\'s o200k_base and cl100k_base over the whole text. The margin (decision 042) must keep the lowest ≥ 1.',
    '',
    table,
    '',
    `- ${placedLine}.`,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'estimator-error', section)
  log(`wrote BENCHMARKS.md (section "estimator-error"); lowest ratios: ${JSON.stringify(worst)}`)
}

const { cleanup } = installCleanup()
runMain(main, cleanup)
