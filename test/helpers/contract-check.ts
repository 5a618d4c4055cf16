import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { LightMyRequestResponse } from 'fastify'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { afterAll } from 'vitest'
import { observeResponse } from './contract-recorder.ts'
import { contractValidatorFor, type ContractReport, type RecordedResponse } from './contract-validator.ts'

/**
 * Every response a test file gets from an app of test/helpers/test-app.ts (through `inject` or a socket) or from
 * a server process of test/e2e/server-process.ts is checked against that app's `/openapi.json`
 * (contract-validator.ts); the file fails in its last afterAll when any did not match (issue 13).
 * Importing this module registers that hook on the importing test file. PARLEY_CONTRACT_CHECK=off
 * turns the check off (e.g. to time something else).
 */

export const contractCheckEnabled = process.env.VITEST !== undefined && process.env.PARLEY_CONTRACT_CHECK !== 'off'

/** The preload that records a server process's responses. */
export const RECORDER_PATH = fileURLToPath(new URL('./contract-recorder.ts', import.meta.url))

const report: ContractReport = { checked: 0, frames: 0, unmatched: 0, mismatches: [] }
const logFiles: Array<{ file: string; documentText: string | null }> = []
let logDir: string | null = null

function take(documentText: string, response: RecordedResponse, source: string, into: ContractReport = report): void {
  const result = contractValidatorFor(documentText).check(response)
  into.checked++
  into.frames += result.frames
  if (!result.matched) into.unmatched++
  for (const mismatch of result.mismatches) into.mismatches.push(`${source}: ${mismatch}`)
}

/** As LightMyRequest answered it: the request it answered and the whole body. */
export function recordedOf(res: LightMyRequestResponse): RecordedResponse {
  const request = res.raw.req as { method?: string; url?: string }
  const contentType = res.headers['content-type']
  return {
    method: request.method ?? 'GET',
    url: request.url ?? '/',
    status: res.statusCode,
    contentType: contentType === undefined ? null : String(contentType),
    body: res.body,
    complete: true,
  }
}

type Watchable = {
  inject: (...args: never[]) => unknown
  swagger: () => unknown
  /** Absent for a stand-in; a real app's HTTP server, which answers once it listens. */
  server?: Pick<Server, 'prependListener'>
}

/**
 * Checks each answer of `app.inject(options)` as it comes (the chained form without options is
 * left alone), and each response its HTTP server sends once it listens. The document is the app's
 * own, read once at the first answer.
 */
export function watchInProcess(app: Watchable, into: ContractReport = report): void {
  if (!contractCheckEnabled) return
  let documentText: string | null = null
  const documentOf = () => (documentText ??= JSON.stringify(app.swagger()))
  const inject = app.inject.bind(app) as (...args: unknown[]) => unknown
  app.inject = ((...args: unknown[]) => {
    const answer = inject(...args)
    // Without options it is a chain still to be built; with a callback the caller takes the answer.
    if (args.length !== 1 || args[0] === undefined || typeof (answer as PromiseLike<unknown>)?.then !== 'function') return answer
    return Promise.resolve(answer as PromiseLike<LightMyRequestResponse>).then((res) => {
      take(documentOf(), recordedOf(res), 'in-process app', into)
      return res
    })
  }) as never
  // First among the listeners, so the response is observed before the app writes to it.
  app.server?.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
    observeResponse(req, res, (response) => take(documentOf(), response, 'in-process app, over a socket', into)),
  )
}

/** A fresh file for a server process to log its responses into (contract-recorder.ts). */
export function emptyReport(): ContractReport {
  return { checked: 0, frames: 0, unmatched: 0, mismatches: [] }
}

export function newLogFile(): string {
  logDir ??= mkdtempSync(join(tmpdir(), 'parley-contract-'))
  const file = join(logDir, `server-${logFiles.length + 1}.jsonl`)
  logFiles.push({ file, documentText: null })
  return file
}

/** The document of the server logging into `file`, read from it once it answered. */
export function setLogDocument(file: string, documentText: string): void {
  const entry = logFiles.find((f) => f.file === file)
  if (entry) entry.documentText = documentText
}

/** Checks the responses logged by server processes; returns what it found. */
export function checkLogFiles(into: ContractReport = report): ContractReport {
  for (const { file, documentText } of logFiles.splice(0)) {
    const source = `server process (${file})`
    if (documentText === null) continue
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((line) => line !== '') : []
    // The readiness probe alone is a response: a log without one means the recorder did not run.
    if (lines.length === 0) into.mismatches.push(`${source}: no response was recorded (is the recorder loaded?)`)
    for (const line of lines) take(documentText, JSON.parse(line) as RecordedResponse, source, into)
  }
  return into
}

/** Throws with the mismatches, if any. */
export function assertNoMismatches(found: ContractReport): void {
  if (found.mismatches.length === 0) return
  const shown = found.mismatches.slice(0, 20).join('\n')
  const more = found.mismatches.length > 20 ? `\n... and ${found.mismatches.length - 20} more` : ''
  throw new Error(`${found.mismatches.length} of ${found.checked} responses do not match /openapi.json:\n${shown}${more}`)
}

/** Outside vitest (a script importing the test helpers) there is no test file to fail. */
if (contractCheckEnabled) afterAll(verifyAfterFile)

export function verifyAfterFile(): void {
  checkLogFiles()
  if (logDir !== null) rmSync(logDir, { recursive: true, force: true })
  logDir = null
  if (process.env.PARLEY_CONTRACT_VERBOSE) {
    console.info(`contract: ${report.checked} responses checked (${report.frames} SSE frames, ${report.unmatched} outside the document's operations), ${report.mismatches.length} mismatches`)
  }
  const found = { ...report, mismatches: report.mismatches.splice(0) }
  report.checked = report.frames = report.unmatched = 0
  assertNoMismatches(found)
}
