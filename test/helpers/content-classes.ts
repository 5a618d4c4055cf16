/**
 * Texts of the content classes the estimator is measured on (bench/estimator-error.ts) and held to
 * (test/domain/tokens/estimate-classes.property.test.ts): English prose, code, JSON, base64 (pure, in
 * JSON records as thumbnails, and one blob placed in prose), and Chinese. Real text where the repository
 * has some (our decisions for prose, our sources for code, the catalogue and lockfile for JSON, the
 * TypeScript compiler's Simplified Chinese messages for CJK), so the figures are not those of a toy
 * alphabet; base64 is of seeded random bytes, as a file's base64 is.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base'

const ROOT = join(import.meta.dirname, '..', '..')
const NO_SPECIAL = { disallowedSpecial: new Set<string>() }

/** The exact o200k_base count of `text` (whole, no chunking): the truth the estimate is held to for OpenAI. */
export const exactO200k = (text: string) => countO200k(text, NO_SPECIAL)
/** The exact cl100k_base count: the other public tokenizer, to see how far two vendors' counts can be apart. */
export const exactCl100k = (text: string) => countCl100k(text, NO_SPECIAL)

const filesUnder = (dir: string, ext: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(ext))
    .map((e) => join(e.parentPath, e.name))
    .sort()

let cache: Record<'prose' | 'code' | 'json' | 'cjk', string> | null = null

/** The real corpora, read once: each a long text to cut slices from. */
export function corpora(): Record<'prose' | 'code' | 'json' | 'cjk', string> {
  if (cache) return cache
  // Prose: our decisions, without their code blocks and tables (English sentences, as a chat's prose is).
  const prose = filesUnder('docs/decisions', '.md')
    .map((f) => readFileSync(f, 'utf8').replace(/```[\s\S]*?```/g, '').split('\n').filter((l) => !l.startsWith('|')).join('\n'))
    .join('\n\n')
  const code = filesUnder('src', '.ts').map((f) => readFileSync(f, 'utf8')).join('\n')
  const json = [readFileSync(join(ROOT, 'catalogue/models.json'), 'utf8'), readFileSync(join(ROOT, 'package-lock.json'), 'utf8')].join('\n')
  const messages = JSON.parse(readFileSync(join(ROOT, 'node_modules/typescript/lib/zh-cn/diagnosticMessages.generated.json'), 'utf8')) as Record<string, string>
  const cjk = Object.values(messages).join('\n')
  cache = { prose, code, json, cjk }
  return cache
}

/** A seeded generator of uint32s (xorshift32): the same seed, the same texts. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1
  return () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state
  }
}

/** The base64 of `bytes` seeded random bytes, as a file's is. */
export function randomBase64(bytes: number, random: () => number): string {
  const buffer = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) buffer[i] = random() & 0xff
  return buffer.toString('base64')
}

/** `length` units of `corpus` from a random place (cut on a line start where one is near, as a pasted text is). */
export function sliceOf(corpus: string, length: number, random: () => number): string {
  if (corpus.length <= length) return corpus
  let start = random() % (corpus.length - length)
  const line = corpus.indexOf('\n', start)
  if (line !== -1 && line - start < 200 && line + 1 + length <= corpus.length) start = line + 1
  return corpus.slice(start, start + length)
}

/** JSON records, each with a base64 thumbnail of 600 to 4,000 bytes, up to about `length` units. */
export function jsonWithThumbnails(length: number, random: () => number): string {
  const records: string[] = []
  let units = 2
  for (let id = 1; units < length; id++) {
    const record = JSON.stringify({
      id,
      name: `photo-${id}.png`,
      width: 64 + (random() % 200),
      height: 64 + (random() % 200),
      tags: ['holiday', 'beach'].slice(0, 1 + (random() % 2)),
      thumbnail: `data:image/png;base64,${randomBase64(600 + (random() % 3400), random)}`,
    })
    records.push(record)
    units += record.length + 1
  }
  return `[${records.join(',')}]`
}

/** One base64 blob of `blobChars` placed at a random point (between words) of `length` units of prose. */
export function base64InProse(length: number, blobChars: number, random: () => number): string {
  const prose = sliceOf(corpora().prose, length - blobChars - 2, random)
  let at = random() % prose.length
  const space = prose.indexOf(' ', at)
  if (space !== -1) at = space + 1
  return `${prose.slice(0, at)}${randomBase64(Math.ceil((blobChars * 3) / 4), random).slice(0, blobChars)} ${prose.slice(at)}`
}

export const CONTENT_CLASSES = ['prose', 'code', 'json', 'base64', 'json-base64', 'base64-in-prose', 'cjk'] as const
export type ContentClass = (typeof CONTENT_CLASSES)[number]

/** A text of `length` units (about, for JSON records) of one class. */
export function textOfClass(kind: ContentClass, length: number, random: () => number): string {
  switch (kind) {
    case 'prose':
    case 'code':
    case 'json':
    case 'cjk':
      return sliceOf(corpora()[kind], length, random)
    case 'base64':
      return randomBase64(Math.ceil((length * 3) / 4), random).slice(0, length)
    case 'json-base64':
      return jsonWithThumbnails(length, random)
    case 'base64-in-prose':
      return base64InProse(length, Math.min(3000, Math.floor(length / 4)), random)
    default: {
      const unknown: never = kind
      throw new Error(`unknown content class ${String(unknown)}`)
    }
  }
}
