/**
 * `npm run bench -- token-estimation`: what one token estimate costs (issue 11, decision 016). For
 * each kind of text, 1 MiB (1,048,576 UTF-16 units): the exact count the estimator made at any length
 * before (`countExactly`, gpt-tokenizer over the whole text, long pieces in 256-unit chunks), then the
 * bounded estimate (`estimateTokens`: exact up to EXACT_MAX_CHARS, sampled past it) over fresh texts
 * of the same kind, with how far it lands from the exact count. Then the worst single call: texts
 * just at EXACT_MAX_CHARS of the costliest kinds, counted exactly.
 *
 * Environment: BENCH_ROUNDS (fresh texts a kind for the bounded estimate, default 10).
 */
import { join } from 'node:path'
import { countExactly, estimateTokens, EXACT_MAX_CHARS, SAMPLE_CHARS, SAMPLE_COUNT } from '../src/domain/tokens/estimate-tokens.ts'
import { REPO_ROOT } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead } from './lib.ts'

const ROUNDS = Math.max(1, Math.trunc(envNumber('BENCH_ROUNDS', 10)))
const MiB = 1024 * 1024

function seeded(alphabet: readonly string[], length: number, seed: number): string {
  let state = seed
  const out: string[] = []
  let units = 0
  while (units < length) {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
    const piece = alphabet[(state >> 4) % alphabet.length]!
    out.push(piece)
    units += piece.length
  }
  return out.join('').slice(0, length)
}

const WORDS = 'the quick brown fox jumps over the lazy dog and then some other words appear in this sentence with punctuation, numbers 42 and more.\n'
  .split(/(?<= )/)
  .concat(['The ', 'Service ', 'returned ', 'an ', 'error. ', 'It ', "didn't ", 'retry. '])
const KINDS: { name: string; alphabet: readonly string[] }[] = [
  { name: 'random lowercase letters, unbroken', alphabet: [...'abcdefghijklmnopqrstuvwxyz'] },
  { name: 'English-like prose (words and punctuation)', alphabet: WORDS },
  { name: 'CJK, unbroken (3,000 distinct characters)', alphabet: Array.from({ length: 3000 }, (_, i) => String.fromCharCode(0x4e00 + i * 7)) },
  { name: 'digits, unbroken', alphabet: [...'0123456789'] },
  { name: 'emoji, unbroken', alphabet: [...'😀😁😂🤣😃😄😅😆😉😊😋😎😍😘🥰😗🐶🐱🐭🐹🐰🦊🐻🐼'] },
  { name: 'base64 alphabet, unbroken', alphabet: [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'] },
  { name: 'JSON records', alphabet: ['{"id":', '17,', '"name":"', 'item', '","ok":true}', ',', '[', ']', '"tags":["a","b"],', '3.14', '\n'] },
  { name: "one letter repeated ('x' × 1 MiB)", alphabet: ['x'] },
]

const timed = <T>(f: () => T): [T, number] => {
  const started = performance.now()
  const value = f()
  return [value, performance.now() - started]
}

async function main() {
  const loadBefore = loadLine()
  // Warm up the tokenizer (its tables load on first use) and the JIT.
  countExactly(seeded(WORDS, 20_000, 1))
  estimateTokens(seeded(WORDS, 200_000, 2))

  const rows: string[] = []
  let worstSampled = 0
  for (const [k, kind] of KINDS.entries()) {
    const first = seeded(kind.alphabet, MiB, 1000 + k)
    log(`${kind.name}: exact count of 1 MiB…`)
    const [exact, exactMs] = timed(() => countExactly(first))
    const times: number[] = []
    let estimate = 0
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh text each round: nothing remembered, nothing in the tokenizer's cache from the round before.
      const text = round === 0 ? first : seeded(kind.alphabet, MiB, 2000 + k * 100 + round)
      const [value, ms] = timed(() => estimateTokens(text))
      if (round === 0) estimate = value
      times.push(ms)
    }
    times.sort((a, b) => a - b)
    worstSampled = Math.max(worstSampled, times.at(-1)!)
    const off = ((estimate - exact) / exact) * 100
    rows.push(
      `| ${kind.name} | ${fmt(exact)} | ${fmt(exactMs)} ms | ${fmt(times[Math.floor(times.length / 2)]!, 1)} ms | ${fmt(times.at(-1)!, 1)} ms | ${fmt(estimate)} | ${off >= 0 ? '+' : ''}${fmt(off, 2)}% |`,
    )
    log(rows.at(-1)!)
  }

  // The worst single call counts EXACT_MAX_CHARS units exactly, every piece new to the tokenizer.
  const exactRows: string[] = []
  let worstExact = 0
  for (const kind of [KINDS[0]!, KINDS[2]!, KINDS[4]!]) {
    const times: number[] = []
    for (let round = 0; round < ROUNDS; round++) times.push(timed(() => estimateTokens(seeded(kind.alphabet, EXACT_MAX_CHARS, 5000 + round)))[1])
    times.sort((a, b) => a - b)
    worstExact = Math.max(worstExact, times.at(-1)!)
    exactRows.push(`| ${kind.name} | ${fmt(times[Math.floor(times.length / 2)]!, 1)} ms | ${fmt(times.at(-1)!, 1)} ms |`)
    log(exactRows.at(-1)!)
  }

  const table = [
    '| 1 MiB of | exact tokens | exact count (before) | bounded estimate p50 | bounded estimate max | estimate | off by |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
  const exactTable = [`| ${fmt(EXACT_MAX_CHARS)} units of | exact count p50 | max |`, '|---|--:|--:|', ...exactRows].join('\n')
  process.stdout.write(`${table}\n\n${exactTable}\n`)
  const section = [
    ...sectionHead('Token estimation: one call on 1 MiB of text (issue 11)', 'bench/token-estimation.ts', loadBefore),
    `- **Load**: in-process, one caller. Per kind: one exact count of a 1 MiB text (what every estimate cost before`,
    `  decision 016), then ${ROUNDS} bounded estimates of fresh 1 MiB texts of the same kind (the first the same text), each`,
    '  timed on its own with `performance.now()` (wall time: on a shared machine it includes other processes).',
    '',
    table,
    '',
    `Texts of up to ${fmt(EXACT_MAX_CHARS)} UTF-16 units are still counted exactly; the costliest of them, every piece new to`,
    `the tokenizer, make the worst single call (${ROUNDS} fresh texts each):`,
    '',
    exactTable,
    '',
    `- **Worst single call** measured: ${fmt(Math.max(worstExact, worstSampled), 1)} ms (sampled 1 MiB: ${fmt(worstSampled, 1)} ms; exact at the`,
    `  size limit: ${fmt(worstExact, 1)} ms). A sampled estimate counts ${SAMPLE_COUNT} windows of about ${SAMPLE_CHARS} units exactly`,
    '  and measures the whole text\'s UTF-8 length natively, so its cost hardly grows with the length.',
    '- "off by" is the sampled estimate against the exact count of the same text (test/domain/tokens/bounded-estimate.test.ts',
    '  holds it within 3% plus one token per 128 units).',
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'token-estimation', section)
  log('wrote BENCHMARKS.md (section "token-estimation")')
}

const { cleanup } = installCleanup()
runMain(main, cleanup)
