import { availableParallelism } from 'node:os'
import { threadId } from 'node:worker_threads'
import { Piscina } from 'piscina'
import { checkToolBundle, countValuesUpTo, type ToolBundleCheck } from '../../domain/config/check-tool-bundle.ts'
import type { ToolDefinition } from '../../domain/config/config-types.ts'
import { BodyWorkBusyError } from '../../domain/errors.ts'
import { afterNextPoll } from '../after-next-poll.ts'
import { asDecodedAttachment, decodeAttachment, type AttachmentToDecode, type DecodedAttachment } from '../../domain/turns/decode-attachment.ts'
import { parseJsonBytes, type ParsedJson } from './parse-json-bytes.ts'

/**
 * Work that reads a request's bytes whole: parsing a JSON body, decoding and checking an
 * attachment (docs/decisions/034-body-work-off-the-event-loop.md), checking a published tool
 * bundle (decision 061). Small inputs are done in place, where a thread hop would cost more than
 * the work; large ones go to a pool of worker threads, so a 20 MiB attachment, a 30 MiB body or
 * 2,000 tools never hold the event loop, and every other request (a `/healthz` probe, a streaming
 * turn) goes on being served.
 */
export type BodyWork = {
  parseJson(bytes: Buffer): Promise<ParsedJson>
  decodeAttachment(input: AttachmentToDecode): Promise<DecodedAttachment>
  /** checkToolBundle (src/domain/config/check-tool-bundle.ts): problems, or the estimate and JSON text to store. */
  checkToolBundle(definitions: ToolDefinition[]): Promise<CheckedToolBundle>
  close(): Promise<void>
}

/** Bodies from this size are parsed on a worker: parsing 1 MiB of JSON takes about 1–2 ms. */
export const OFFLOAD_JSON_BYTES = 1024 * 1024
/** Attachments from this much base64 are decoded on a worker (decoding, sniffing, checking, hashing 192 KiB: about 1 ms). */
export const OFFLOAD_BASE64_CHARS = 256 * 1024

/**
 * Tool bundles of this many values (objects, arrays, strings, numbers) or more are checked on a
 * worker (decision 061). Checking and estimating a bundle new to the token estimator's memo costs
 * about 10 µs a value, most of it tokenizing: 14 tools of test/helpers/large-tool-bundle.ts (484
 * values) took 7–13 ms in place on a busy 2-core machine, 59 tools (2,037) 20–58 ms, 2,000 tools
 * (69,000) 0.2–0.5 s. Deciding costs at most this many steps (countValuesUpTo).
 */
export const OFFLOAD_TOOL_BUNDLE_VALUES = 512

/** How many tasks may wait for a thread: past it a request is refused (503), not queued without bound. */
const MAX_QUEUED = 256
/** A thread idle this long exits; the next large body starts one again. */
const IDLE_MS = 30_000

/** A tool bundle's check, and the thread that made it (`threadId` of node:worker_threads: the event loop's own when in place). */
export type CheckedToolBundle = ToolBundleCheck & { threadId: number }

export type BodyWorkOptions = { threads?: number; maxQueued?: number }

export function createBodyWork(options: BodyWorkOptions = {}): BodyWork {
  let pool: Piscina | null = null
  const poolOf = () => {
    pool ??= new Piscina({
      filename: new URL('./body-worker-entry.mjs', import.meta.url).href,
      minThreads: 0,
      maxThreads: options.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1)),
      idleTimeout: IDLE_MS,
      maxQueue: options.maxQueued ?? MAX_QUEUED,
      // The entry registers tsx itself; the main thread's flags (vitest's, a test runner's loaders) stay out.
      execArgv: [],
    })
    return pool
  }
  const run = async <T>(task: unknown, name: string, transferList?: ArrayBuffer[]): Promise<T> => {
    try {
      return (await poolOf().run(task, { name, ...(transferList ? { transferList } : {}) })) as T
    } catch (error) {
      if ((error as Error).message === 'Task queue is at limit') {
        throw new BodyWorkBusyError()
      }
      throw error
    }
  }
  return {
    // A large body's Buffer owns its memory (Node pools only small ones) and is not read again: moved, not copied.
    parseJson: (bytes) =>
      bytes.byteLength < OFFLOAD_JSON_BYTES
        ? Promise.resolve(parseJsonBytes(bytes))
        : run<ParsedJson>(bytes, 'parseJson', ownsItsMemory(bytes) ? [bytes.buffer as ArrayBuffer] : undefined),
    decodeAttachment: async (input) =>
      input.data_base64.length < OFFLOAD_BASE64_CHARS ? decodeAttachment(input) : asDecodedAttachment(await run(input, 'decodeAttachment')),
    // The definitions are copied to the thread (a structured clone keeps every value as parsed, so
    // the check sees what the in-place one would); the stored JSON text comes back as one string.
    // The copy (10–20 ms for 1 MiB) is made after the loop has polled for I/O again, not in the
    // same stretch as the body's parsing, scans and schema validation, which it would lengthen.
    checkToolBundle: async (definitions) => {
      if (countValuesUpTo(definitions, OFFLOAD_TOOL_BUNDLE_VALUES) < OFFLOAD_TOOL_BUNDLE_VALUES) return { ...checkToolBundle(definitions), threadId }
      await afterNextPoll()
      return run<CheckedToolBundle>(definitions, 'checkToolBundle')
    },
    close: async () => {
      await pool?.destroy()
      pool = null
    },
  }
}

const ownsItsMemory = (bytes: Buffer) => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
