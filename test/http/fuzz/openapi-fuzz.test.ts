/**
 * Fuzz suite driven by the app's own `/openapi.json` (issue 11, "hold up under bad input").
 *
 * For EVERY operation in the document, fast-check generates requests: bodies derived from the
 * operation's schema, the same bodies with one or two things wrong (wrong types, missing required
 * fields, undeclared properties, huge strings, deep nesting, odd unicode, bad base64, numbers out of
 * range), malformed JSON and wrong content types, path ids of the caller's own organisation, of
 * another organisation, missing, deleted and odd ones, query strings right and wrong, and missing,
 * wrong or revoked credentials. Each request goes to a real app over a real SQLite file
 * (`app.inject`; a turn's SSE stream is consumed whole) and every answer must hold:
 *
 * - never a 5xx;
 * - every status >= 400 is JSON in the envelope `{"error": {"code", "message", "details"?, "hint"?}}`;
 * - a rejected request (4xx) leaves the row count of every table in the database unchanged, and
 *   writes no row at all (SQLite's total_changes() on the app's connection);
 * - an id owned by another organisation (path, query or body) answers exactly as a missing id does.
 *
 * Then requests to any operations at once, accepted writes racing on one chat and one configuration
 * kind, and the same generated requests over a real socket (undici against `app.listen`) with clients
 * hanging up in the middle of a turn's stream: never a 5xx, errors in the envelope, and no run is
 * left `running` once the dust settles.
 *
 * Issue 22 adds to every generator what a hostile client sends: lone surrogates (a high or low half
 * alone, a reversed pair) in any string or property name of a body and, percent-encoded, in paths and
 * queries; bodies nested up to 200k levels as raw JSON text, to every operation (with or without a
 * body) and to unknown paths, with and without a key; and on the turn route attachments of PNG, JPEG,
 * PDF, text and random bytes from a few bytes up to 6 MiB (the MiB ones rare), whole, cut or empty,
 * in good and bad base64, declared as what they are or not. Besides the checks above: a body with a
 * lone surrogate (decision 031) or nested past 256 levels (decision 030) is never accepted, nor a
 * turn whose attachment is plainly not what it declares (decision 032); with FUZZ_RUNS >= 500 every
 * operation must have been sent each of them. The figures (and, with FUZZ_VERBOSE=1, per operation)
 * are printed at the end.
 *
 * Runs: FUZZ_RUNS (default 60) requests per operation, so about 3,000 (plus twins for the
 * foreign-id comparison) under `npm test`; e.g. `FUZZ_RUNS=2000 npx vitest run test/http/fuzz`
 * for a long run. A failure prints fast-check's seed and path; replay it with
 * `FUZZ_SEED=<seed> FUZZ_PATH=<path> npx vitest run test/http/fuzz -t '<operation>'` (the app
 * is fresh per file, so `-t` on the one operation gives the closest replay).
 */
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { Agent, request as undiciRequest } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'
import { parseSse, sandboxCatalogue } from '../../helpers/turns.ts'
import { conversationIdOf, outputItemIdOf, partItemIdOf, responseIdOf } from '../../../src/domain/openai/openai-ids.ts'
import { isFacadePath } from '../../../src/http/openai/openai-error.ts'
import {
  Attachment,
  Deep,
  holdsIllFormedText,
  jsonText,
  nestedBodyArb,
  nestedText,
  requestArb,
  type BodyChoice,
  type FuzzRequest,
  type IdChoice,
  type OpenApiDoc,
  type Pools,
} from './arbitraries.ts'

const RUNS = Number(process.env.FUZZ_RUNS ?? 60)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
const PATH = process.env.FUZZ_PATH
/** A missing id of the right shape: what another organisation's id must look like from outside. */
const MISSING = '3f2c1b0a-9d8e-4f7a-b6c5-d4e3f2a1b0c9'

type IdKind = 'chat' | 'run' | 'instructions' | 'tools' | 'retention' | 'budgets' | 'model' | 'conversation' | 'response' | 'item'
/** MISSING as the OpenAI facade spells ids: its 32 hex digits (decision 055). */
const MISSING_HEX = MISSING.replaceAll('-', '')
type OrgFixture = { org: TestOrg; ids: Record<IdKind, string[]>; deletedChat: string }

let ctx: TestContext
let doc: OpenApiDoc
let orgs: OrgFixture[]
let revokedKey: string
let pools: Pools
let tables: string[]
/** Statuses answered that the operation's OpenAPI entry does not list (reported, not failed). */
const undocumented = new Map<string, Set<number>>()
let requestCount = 0
/** Nested bodies sent by the test of any path, and sockets the server closed before a body over 1 MiB was written. */
let nestedElsewhere = 0
let closedEarly = 0
let listeningAt: Promise<string> | null = null
/** The app over a real socket, started once for the tests that need it. */
const listening = () => (listeningAt ??= ctx.app.listen({ port: 0, host: '127.0.0.1' }))
/**
 * The client of the socket tests, closed before the app: a connection on which the server answered
 * before it read the body (an unknown path, a refusal) may be held by both ends, the server waiting
 * for the rest of the body, and would hold the app's close() until its request timeout (60 s).
 */
const agent = new Agent()
const clientRequest: typeof undiciRequest = ((url: string, options: Parameters<typeof undiciRequest>[1] = {}) =>
  undiciRequest(url, { ...options, dispatcher: agent })) as typeof undiciRequest
/** Tool calls each chat has pending, from the last turn's `done` frame: tool results may name them. */
const pendingByChat = new Map<string, Array<{ tool_use_id: string; tool_name: string }>>()

function notePending(chatId: string | undefined, body: string) {
  if (chatId === undefined) return
  const done = parseSse(body).find((f) => f.event === 'done')
  if (done) pendingByChat.set(chatId, done.data.pending_tool_calls ?? [])
}
/** Statuses seen per operation, printed with FUZZ_VERBOSE=1 to see what the generators reach. */
const seen = new Map<string, Map<number, number>>()
function record(op: string, status: number) {
  if (!seen.has(op)) seen.set(op, new Map())
  seen.get(op)!.set(status, (seen.get(op)!.get(status) ?? 0) + 1)
}

const KINDS = ['instructions', 'tools', 'retention', 'budgets'] as const

async function call(method: string, url: string, org: TestOrg, payload?: unknown): Promise<any> {
  const res = await ctx.app.inject({ method: method as 'GET', url, headers: org.auth, ...(payload === undefined ? {} : { payload: payload as object }) })
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300)
  return res.headers['content-type']?.toString().startsWith('application/json') ? res.json() : res.body
}

async function fixtureFor(org: TestOrg, n: number): Promise<OrgFixture> {
  const chats: string[] = []
  for (const body of [{}, { namespace: 'acme/support', title: `chat ${n}` }, { namespace: 'acme' }]) chats.push((await call('POST', '/api/v1/chats', org, body)).id)
  const runs: string[] = []
  if (n !== 2) {
    // Org 2 has no credit: its turns are refused.
    // A finished turn, one waiting on a tool result and a failed one (retry_of may name it).
    for (const [chat, text] of [[chats[0], 'hello'], [chats[2], '/tool lookup {"q":"refund"}'], [chats[1], '/fail-mid']] as const) {
      const body = await call('POST', `/api/v1/chats/${chat}/responses`, org, { model: 'sandbox/echo', input: [{ type: 'prompt', text }] })
      runs.push(parseSse(body as string)[0]!.data.run_id)
      notePending(chat, body as string)
    }
  }
  const versions: Record<string, string[]> = {}
  const bodies: Record<(typeof KINDS)[number], Record<string, unknown>> = {
    instructions: { body: `You are assistant ${n}.`, mode: 'append', namespace: 'acme' },
    tools: { mode: 'append', definitions: [{ name: `tool_${n}`, input_schema: { type: 'object', properties: { q: { type: 'string' } } } }] },
    retention: { rules: { version: 1, anchor_parts: n } },
    budgets: { budget: { version: 3, headroom: 0.1, max_history_tokens: 32_000 + n }, namespace: 'acme/support' },
  }
  for (const kind of KINDS) {
    versions[kind] = []
    for (let i = 0; i < 2; i++) {
      const published = await call('POST', `/api/v1/config/${kind}`, org, bodies[kind])
      versions[kind].push((Array.isArray(published) ? published[0] : published).id)
    }
  }
  const deletedChat = (await call('POST', '/api/v1/chats', org, {})).id
  await call('DELETE', `/api/v1/chats/${deletedChat}`, org)
  const models = sandboxCatalogue().map((m) => m.name)
  // The facade's ids of the same chats and runs, and items: a prompt (named by its part) and an answer (by its run).
  const firstParts = ctx.store.parts.page({ chatId: chats[0]!, limit: 4 }).rows
  const items = firstParts.map((part) => (part.run_id !== null && part.kind === 'message' ? outputItemIdOf('msg', part.run_id, 0) : partItemIdOf(part.kind === 'tool_result' ? 'fco' : 'msg', part.id)))
  return {
    org,
    deletedChat,
    ids: {
      chat: chats,
      run: runs.length > 0 ? runs : [MISSING],
      instructions: versions.instructions!,
      tools: versions.tools!,
      retention: versions.retention!,
      budgets: versions.budgets!,
      model: models,
      conversation: chats.map(conversationIdOf),
      response: (runs.length > 0 ? runs : [MISSING]).map(responseIdOf),
      item: items.length > 0 ? items : [partItemIdOf('msg', MISSING)],
    },
  }
}

/** Ids of every organisation but `actor`: runs, chats and configuration versions. */
function idsNotOf(actor: number): string[] {
  const uuids = orgs.flatMap((o, i) => (i === actor ? [] : [...o.ids.chat, ...o.ids.run, ...KINDS.flatMap((k) => o.ids[k]), o.deletedChat])).filter((id) => id !== MISSING)
  // The facade names the same rows by their hex digits (decision 055): another organisation's must answer as missing ones too.
  return [...uuids, ...uuids.map((id) => id.replaceAll('-', ''))]
}

/** Rows inserted, updated or deleted on the app's connection since it opened. */
const totalChanges = () => (ctx.store.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n

function countAll(): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const table of tables) counts[table] = (ctx.store.db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n
  return counts
}

const running = () => (ctx.store.db.prepare(`SELECT count(*) AS n FROM runs WHERE status = 'running'`).get() as { n: number }).n

/** Waits until no run is running and the row counts hold still: background work of an accepted request is over. False if it never did. */
async function settle(): Promise<boolean> {
  const deadline = Date.now() + 5_000
  let last = JSON.stringify(countAll())
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 2))
    const now = JSON.stringify(countAll())
    if (now === last && running() === 0) return true
    last = now
  }
  return false
}

/** What a path parameter names, from the operation's path. */
function idKindOf(path: string, param: string): IdKind {
  if (param === 'chat_id') return 'chat'
  if (param === 'run_id') return 'run'
  if (param === 'name') return 'model'
  if (param === 'conversation_id') return 'conversation'
  if (param === 'response_id') return 'response'
  if (param === 'item_id') return 'item'
  const kind = KINDS.find((k) => path.startsWith(`/api/v1/config/${k}/`))
  if (!kind) throw new Error(`no id kind for ${param} in ${path}`)
  return kind
}

/** Percent-encodes a string's UTF-8 bytes (a lone surrogate becomes U+FFFD), keeping `keep` as is. */
const enc = (s: string, keep = /[A-Za-z0-9\-_.~]/) =>
  [...Buffer.from(s, 'utf8')].map((byte) => (byte < 0x80 && keep.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('')

type Built = {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string
  actor: number | null
  /** Why the server must not accept this request, from what the body holds; [] when it may. */
  mustRefuse: string[]
  /** What the body holds, for the figures printed at the end. */
  holds: { illFormed: boolean; nested: boolean; attachments: Attachment[] }
}

/** The largest nesting the JSON parser reads (decision 030). */
const BODY_MAX_DEPTH = 256
const MiB = 1024 * 1024
const readsBody = (method: string) => method !== 'GET' && method !== 'HEAD'
const isJson = (contentType: string | undefined) => contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType)
const TURN = /^\/api\/v1\/chats\/[^/]+\/responses$/

/** The attachments of a body, each with what it is declared as. */
function attachmentsOf(value: unknown): Array<{ attachment: Attachment; mime: unknown }> {
  const out: Array<{ attachment: Attachment; mime: unknown }> = []
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (v === null || typeof v !== 'object' || v instanceof Deep || v instanceof Attachment) continue
    const data = (v as Record<string, unknown>).data_base64
    if (data instanceof Attachment) out.push({ attachment: data, mime: (v as Record<string, unknown>).mime })
    stack.push(...Object.values(v))
  }
  return out
}

/**
 * Invariants of what a body holds (issue 22): a body string or property name with a lone surrogate
 * is never accepted (decision 031); a body nested past 256 levels is never accepted (decision 030);
 * an attachment that is plainly not what it declares (bad base64, empty, cut short, another type,
 * text that is not UTF-8, a PNG of 100000 px) is never accepted on a turn (decision 032).
 */
function judge(method: string, url: string, contentType: string | undefined, body: BodyChoice): Pick<Built, 'mustRefuse' | 'holds'> {
  const holds: Built['holds'] = { illFormed: false, nested: false, attachments: [] }
  const mustRefuse: string[] = []
  let value: unknown
  if (body.kind === 'valid' || body.kind === 'mutated') value = body.value
  else if (body.kind === 'raw' && body.text.length < 100_000) {
    try {
      value = JSON.parse(body.text)
    } catch {
      value = undefined
    }
  }
  if (body.kind === 'nested') {
    holds.nested = true
    const depth = body.deep.levels + (body.wrap === 'none' ? 0 : 1)
    if (depth > BODY_MAX_DEPTH && readsBody(method)) mustRefuse.push(`a body nested ${depth} levels`)
  }
  if (value !== undefined) {
    holds.illFormed = holdsIllFormedText(value)
    if (holds.illFormed && readsBody(method) && isJson(contentType)) mustRefuse.push('a body with a lone surrogate')
    const media = attachmentsOf(value)
    holds.attachments = media.map((m) => m.attachment)
    if (method === 'POST' && TURN.test(url.split('?')[0]!) && isJson(contentType)) {
      for (const { attachment, mime } of media) {
        const why = attachment.mustRefuse(mime)
        if (why !== null) mustRefuse.push(`an attachment: ${why} (${String(attachment[fc.toStringMethod]())})`)
      }
    }
  }
  return { mustRefuse, holds }
}

function build(path: string, req: FuzzRequest): Built {
  const actor = req.auth.kind === 'org' ? req.auth.org : null
  const self = orgs[actor ?? 0]!
  const other = orgs[((actor ?? 0) + 1) % 2]!
  const resolve = (param: string, choice: IdChoice): string => {
    const kind = idKindOf(path, param)
    switch (choice.kind) {
      case 'own': {
        const list = self.ids[kind]
        return list[choice.index % list.length]!
      }
      case 'foreign': {
        const list = other.ids[kind]
        return kind === 'model' ? 'sandbox/echo' : list[choice.index % list.length]!
      }
      case 'missing':
        return kind === 'model' ? `sandbox/${choice.uuid}` : kind === 'conversation' ? conversationIdOf(choice.uuid) : kind === 'response' ? responseIdOf(choice.uuid) : kind === 'item' ? partItemIdOf('msg', choice.uuid) : choice.uuid
      case 'deleted':
        return kind === 'chat' ? self.deletedChat : kind === 'conversation' ? conversationIdOf(self.deletedChat) : kind === 'response' ? responseIdOf(MISSING) : kind === 'item' ? partItemIdOf('msg', MISSING) : MISSING
      case 'raw':
        return choice.encode ? enc(choice.value) : enc(choice.value, /[\x21-\x7e]/)
    }
  }
  let url = path
  for (const [param, choice] of Object.entries(req.ids)) {
    const value = resolve(param, choice)
    // The catalogue's model route is a wildcard: names carry their slash.
    url = url.replace(`{${param}}`, param === 'name' && choice.kind !== 'raw' ? value.split('/').map((segment) => enc(segment)).join('/') : value)
  }
  const query = [...req.query]
  const headers: Record<string, string> = { ...req.headers }
  switch (req.auth.kind) {
    case 'org':
      headers.authorization = orgs[req.auth.org]!.org.auth.authorization
      break
    case 'header':
      headers.authorization = req.auth.value
      break
    case 'revoked':
      headers.authorization = `Bearer ${revokedKey}`
      break
    case 'queryKey':
      query.push(['api_key', orgs[req.auth.org]!.org.key])
      break
    case 'none':
      break
  }
  const parts = query.map(([k, v]) => `${enc(k)}=${enc(v)}`)
  if (req.rawQuery !== null) parts.push(req.rawQuery)
  if (parts.length > 0) url += `?${parts.join('&')}`
  let payload: string | undefined
  const chatId = /\/chats\/([0-9a-f-]{36})\//.exec(url)?.[1]
  const pending = (chatId === undefined ? undefined : pendingByChat.get(chatId)) ?? []
  const fillPending = (text: string) =>
    text.replace(/@pending(name)?(\d)@/g, (_m, name: string | undefined, n: string) => {
      const call = pending[Number(n) % Math.max(1, pending.length)]
      return call === undefined ? 'toolu_none' : name ? call.tool_name : call.tool_use_id
    })
  const body = req.body
  if (body.kind === 'nested') {
    payload = nestedText(body)
    if (body.contentType !== '') headers['content-type'] = body.contentType
  } else if (body.kind === 'raw') {
    payload = body.text
    if (body.contentType !== '') headers['content-type'] = body.contentType
  } else if (body.kind === 'valid' || body.kind === 'mutated') {
    if (body.value !== undefined) {
      payload = fillPending(jsonText(body.value))
      headers['content-type'] = body.kind === 'valid' && body.contentType !== undefined ? body.contentType : 'application/json'
    }
  }
  return { method: req.method, url, headers, payload, actor, ...judge(req.method, url, payload === undefined ? undefined : headers['content-type'], body) }
}

/** What the generators reached, and how it was answered: printed at the end. */
const reach = {
  illFormed: 0,
  nested: 0,
  attachments: 0,
  attachmentsOver1MiB: 0,
  largestAttachment: 0,
  largestBody: 0,
  slowest: { ms: 0, what: '' },
  fivexx: 0,
  /** Per operation: bodies with a lone surrogate, nested bodies, attachments. */
  perOp: new Map<string, { illFormed: number; urlSurrogate: number; nested: number; attachments: number }>(),
}

/** Notes what a request held, and checks the invariants of what it held against its status. */
function checkHolds(op: string, b: Built, status: number, where: string, ms: number) {
  if (status >= 500) reach.fivexx++
  const counts = reach.perOp.get(op) ?? { illFormed: 0, urlSurrogate: 0, nested: 0, attachments: 0 }
  // A lone surrogate percent-encoded in the path or the query (its CESU-8 bytes, or a %u escape).
  if (/%ED%[AB][0-9A-F]|%u[Dd][89ABab]/.test(b.url)) counts.urlSurrogate++
  reach.perOp.set(op, counts)
  if (b.holds.illFormed) {
    reach.illFormed++
    counts.illFormed++
  }
  if (b.holds.nested) {
    reach.nested++
    counts.nested++
  }
  for (const attachment of b.holds.attachments) {
    reach.attachments++
    counts.attachments++
    if (attachment.size >= MiB) reach.attachmentsOver1MiB++
    reach.largestAttachment = Math.max(reach.largestAttachment, attachment.size)
  }
  reach.largestBody = Math.max(reach.largestBody, b.payload?.length ?? 0)
  if (ms > reach.slowest.ms) reach.slowest = { ms, what: `${op}: ${describeRequest(b).slice(0, 200)} -> ${status}` }
  if (status < 300 && b.mustRefuse.length > 0) throw new Error(`accepted (${status}) although it holds ${b.mustRefuse.join('; ')}: ${where}`)
}

function send(b: Built): Promise<LightMyRequestResponse> {
  requestCount++
  return ctx.app.inject({ method: b.method as 'GET', url: b.url, headers: b.headers, ...(b.payload === undefined ? {} : { payload: b.payload }) })
}

const describeRequest = (b: Built) => `${b.method} ${b.url.slice(0, 300)} ${JSON.stringify(b.headers).slice(0, 300)} body=${(b.payload ?? '').slice(0, 300)}`

/** Keeps the fixtures usable after an accepted write: a deleted chat is replaced, and accepted work has finished. */
async function keepFixtures(path: string, b: Built, status: number): Promise<void> {
  if (status >= 300 || b.method === 'GET') return
  if (b.method === 'DELETE' && /^\/api\/v1\/chats\/[^/]+$/.test(path) && status === 204) {
    const self = orgs[b.actor ?? 0]!
    const deleted = decodeURIComponent(b.url.split('?')[0]!.split('/').pop()!)
    const i = self.ids.chat.indexOf(deleted)
    if (i >= 0) self.ids.chat[i] = (await call('POST', '/api/v1/chats', self.org, {})).id
  }
  await settle()
}

/** OpenAI's error shape, which the facade's paths answer in (decision 055): message, type, param and code, the last two nullable. */
function expectOpenAIError(body: any, where: string) {
  const error = body.error
  expect(Object.keys(error).sort(), where).toEqual(['code', 'message', 'param', 'type'])
  expect(typeof error.message === 'string' && error.message.length > 0, where).toBe(true)
  expect(['invalid_request_error', 'authentication_error', 'permission_error', 'rate_limit_error', 'insufficient_quota', 'server_error'], where).toContain(error.type)
  expect(error.param === null || typeof error.param === 'string', where).toBe(true)
  expect(error.code === null || typeof error.code === 'string', where).toBe(true)
}

/** The envelope spec §7 requires of every error; OpenAI's on the facade's paths. */
function expectEnvelope(res: LightMyRequestResponse, where: string, url?: string) {
  expect(res.headers['content-type'], where).toMatch(/^application\/json/)
  let body: any
  expect(() => (body = JSON.parse(res.body)), `${where}: not JSON: ${res.body.slice(0, 200)}`).not.toThrow()
  expect(Object.keys(body), where).toEqual(['error'])
  // The path as the server sees it: clients resolve `.` and `..` segments before sending.
  if (url !== undefined && isFacadePath(new URL(url, 'http://parley.test').pathname)) return expectOpenAIError(body, where)
  const error = body.error
  expect(typeof error, where).toBe('object')
  expect(typeof error.code, where).toBe('string')
  expect(error.code.length, where).toBeGreaterThan(0)
  expect(typeof error.message, where).toBe('string')
  expect(error.message.length, where).toBeGreaterThan(0)
  for (const key of Object.keys(error)) expect(['code', 'message', 'details', 'hint'], `${where}: key ${key}`).toContain(key)
  if ('hint' in error) expect(error.hint === null || typeof error.hint === 'string', where).toBe(true)
  // Validation problems (decisions §3): where, an RFC 6901 pointer, and a message.
  const problems = (error.details as { problems?: unknown } | undefined)?.problems
  if (problems !== undefined) {
    expect(Array.isArray(problems), where).toBe(true)
    for (const problem of problems as Array<Record<string, unknown>>) {
      expect(Object.keys(problem).sort(), where).toEqual(['in', 'message', 'pointer'])
      expect(['body', 'query', 'path'], where).toContain(problem.in)
      expect(problem.pointer, where).toMatch(/^(\/([^/~]|~[01])*)*$/)
      expect(typeof problem.message === 'string' && problem.message.length > 0, where).toBe(true)
    }
  }
}

async function checkOne(method: string, path: string, documented: string[], b: Built): Promise<LightMyRequestResponse> {
  const before = countAll()
  const changesBefore = totalChanges()
  const started = performance.now()
  const res = await send(b)
  const where = `${describeRequest(b)} -> ${res.statusCode} ${res.body.slice(0, 500)}`
  checkHolds(`${method.toUpperCase()} ${path}`, b, res.statusCode, where, performance.now() - started)
  expect(res.statusCode, where).toBeLessThan(500)
  if (res.statusCode >= 400) {
    expectEnvelope(res, where, b.url)
    expect(countAll(), `rows changed by a rejected request: ${where}`).toEqual(before)
    // Stricter still: not one row inserted, updated or deleted on the app's connection.
    expect(totalChanges() - changesBefore, `rows written by a rejected request: ${where}`).toBe(0)
  } else if (res.statusCode === 200 && res.headers['content-type']?.toString().startsWith('text/event-stream')) {
    expect(() => parseSse(res.body), where).not.toThrow()
    notePending(/\/chats\/([0-9a-f-]{36})\/responses/.exec(b.url)?.[1], res.body)
  }
  const op = `${method.toUpperCase()} ${path}`
  record(op, res.statusCode)
  if (process.env.FUZZ_VERBOSE === '3' || (process.env.FUZZ_VERBOSE === '2' && seen.get(op)!.get(res.statusCode)! <= 4)) console.info(`[${op}] ${describeRequest(b).slice(0, 400)}\n    -> ${res.statusCode} ${res.body.slice(0, 300)}`)
  // A range entry (`4XX`, decision 036) documents every status of its class.
  const inRange = documented.includes(`${String(res.statusCode)[0]}XX`)
  if (!documented.includes(String(res.statusCode)) && !inRange && b.method === method.toUpperCase()) {
    const key = `${b.method} ${path}`
    if (!undocumented.has(key)) undocumented.set(key, new Set())
    undocumented.get(key)!.add(res.statusCode)
  }
  return res
}

beforeAll(async () => {
  const res = await ctx.app.inject({ url: '/openapi.json' })
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const a = ctx.org('fuzz-a')
  const b = ctx.org('fuzz-b')
  const z = ctx.org('fuzz-z')
  ctx.store.balance.add(a.orgId, 'topup', '1000')
  ctx.store.balance.add(b.orgId, 'topup', '1000')
  orgs = [await fixtureFor(a, 0), await fixtureFor(b, 1), await fixtureFor(z, 2)]
  const revoked = ctx.store.apiKeys.create(a.orgId, 'revoked')
  ctx.store.apiKeys.revoke(revoked.id)
  revokedKey = revoked.key
  tables = (ctx.store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[]).map((t) => t.name)
  const catalogue = sandboxCatalogue()
  pools = {
    models: [...catalogue.map((m) => m.name), 'sandbox/echo', 'sandbox/echo'],
    badModels: ['missing/model', 'SANDBOX/ECHO', 'sandbox/echo ', 'sandbox', 'sandbox/', '/echo'],
    uuids: [...catalogue.map((m) => m.id), ...orgs.flatMap((o) => [...o.ids.run, ...o.ids.chat, ...KINDS.flatMap((k) => o.ids[k])])],
  }
  await settle()
}, 60_000)

afterAll(async () => {
  const lines = [...undocumented].map(([op, statuses]) => `  ${op}: ${[...statuses].sort().join(', ')}`)
  console.info(`fuzz: ${requestCount} requests` + (lines.length > 0 ? `; statuses not in the operation's OpenAPI entry:\n${lines.join('\n')}` : ''))
  console.info(
    `fuzz: ${reach.fivexx} × 5xx; bodies with a lone surrogate ${reach.illFormed}, nested bodies ${reach.nested} (${nestedElsewhere} of them to any path), ` +
      `attachments ${reach.attachments} (${reach.attachmentsOver1MiB} of 1 MiB or more, largest ${(reach.largestAttachment / MiB).toFixed(1)} MiB), ` +
      `largest body ${(reach.largestBody / MiB).toFixed(1)} MiB, sockets closed before a large body was written ${closedEarly}; slowest answer ${reach.slowest.ms.toFixed(0)} ms (${reach.slowest.what})`,
  )
  if (process.env.FUZZ_VERBOSE) for (const [op, c] of reach.perOp) console.info(`  ${op}: lone surrogate in body ${c.illFormed}, in path or query ${c.urlSurrogate}, nested ${c.nested}, attachments ${c.attachments}`)
  if (process.env.FUZZ_VERBOSE) for (const [op, counts] of seen) console.info(`  ${op}: ${[...counts].sort((x, y) => x[0] - y[0]).map(([st, n]) => `${st}×${n}`).join(' ')}`)
  await agent.destroy()
  await ctx?.close()
})

// The app is built at collection time: its document names the operations to test.
ctx = await createTestApp({ catalogue: sandboxCatalogue() })
doc = (await ctx.app.inject({ url: '/openapi.json' })).json() as OpenApiDoc
const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ method, path })))

describe('fuzzing every operation of /openapi.json', () => {
  it('covers every operation', () => {
    expect(operations.length).toBeGreaterThan(40)
  })

  for (const { method, path } of operations) {
    it(`${method.toUpperCase()} ${path}`, { timeout: Math.max(30_000, RUNS * 200) }, async () => {
      const op = doc.paths[path]![method]!
      const documented = Object.keys(op.responses)
      await fc.assert(
        fc.asyncProperty(requestArb(doc, method, op, orgs.length, pools), async (req) => {
          const b = build(path, req)
          const res = await checkOne(method, path, documented, b)
          // Another organisation's id (in the path, the query or the body) answers exactly as a missing one does.
          const foreign = b.actor === null ? [] : idsNotOf(b.actor).filter((id) => b.url.includes(id) || (b.payload ?? '').includes(id))
          if (foreign.length > 0) {
            const swap = (text: string) => foreign.reduce((t, id) => t.split(id).join(id.includes('-') ? MISSING : MISSING_HEX), text)
            const inPath = foreign.some((id) => b.url.split('?')[0]!.includes(id))
            if (res.statusCode < 300 && inPath) throw new Error(`another organisation's id was served: ${describeRequest(b)} -> ${res.statusCode} ${res.body.slice(0, 300)}`)
            if (res.statusCode >= 400) {
              const twin: Built = { ...b, url: swap(b.url), ...(b.payload === undefined ? {} : { payload: swap(b.payload) }) }
              const twinRes = await checkOne(method, path, documented, twin)
              expect(res.statusCode, `foreign ${describeRequest(b)} vs missing: ${res.body.slice(0, 300)} / ${twinRes.body.slice(0, 300)}`).toBe(twinRes.statusCode)
              expect(swap(res.body), `foreign ${describeRequest(b)} vs missing`).toBe(twinRes.body)
            }
          }
          await keepFixtures(path, b, res.statusCode)
        }),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: false },
      )
    })
  }

  // Requests to any operations at once (two turns on one chat, a delete during a turn, publishes
  // racing activations): still never a 5xx, errors still in the envelope. Row counts are not
  // compared here: the accepted requests of a batch write while the others are answered.
  it('concurrent requests to any operations', { timeout: Math.max(30_000, RUNS * 400) }, async () => {
    // Turns and what races them (deleting their chat, reading its history, cancelling) come up most.
    const weightOf = (method: string, path: string) => (path.endsWith('/responses') ? 12 : path.startsWith('/api/v1/chats/{chat_id}') || path.startsWith('/api/v1/runs/') ? 3 : 1)
    const one = fc.oneof(
      ...operations.map(({ method, path }) => ({
        weight: weightOf(method, path),
        arbitrary: requestArb(doc, method, doc.paths[path]![method]!, orgs.length, pools).map((req) => ({ method, path, req })),
      })),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(one, { minLength: 2, maxLength: 8 }), async (batch) => {
        const built = batch.map(({ path, req }) => build(path, req))
        const started = performance.now()
        const answers = await Promise.all(built.map(send))
        const ms = performance.now() - started
        answers.forEach((res, i) => {
          record(`concurrent ${batch[i]!.method.toUpperCase()} ${batch[i]!.path}`, res.statusCode)
          const where = `${describeRequest(built[i]!)} -> ${res.statusCode} ${res.body.slice(0, 500)}`
          checkHolds(`${batch[i]!.method.toUpperCase()} ${batch[i]!.path}`, built[i]!, res.statusCode, where, ms)
          expect(res.statusCode, where).toBeLessThan(500)
          if (res.statusCode >= 400) expectEnvelope(res, where, built[i]!.url)
        })
        for (const [i, res] of answers.entries()) await keepFixtures(batch[i]!.path, built[i]!, res.statusCode)
        await settle()
      }),
      { numRuns: Math.ceil(RUNS / 2), ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: false },
    )
  })

  // The same requests through Node's HTTP server and a real client (the parser, Content-Length,
  // chunked streams), and clients that hang up in the middle of a turn's stream: the run still
  // ends (nothing stays `running`) and the next request is answered.
  it('over a real socket, with clients hanging up mid-stream', { timeout: Math.max(30_000, RUNS * 400) }, async () => {
    const base = await listening()
    const weightOf = (path: string) => (path.endsWith('/responses') ? 10 : 1)
    const one = fc.oneof(
      ...operations.map(({ method, path }) => ({
        weight: weightOf(path),
        arbitrary: requestArb(doc, method, doc.paths[path]![method]!, orgs.length, pools).map((req) => ({ method, path, req })),
      })),
    )
    const self = orgs[0]!
    await fc.assert(
      fc.asyncProperty(one, fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(0, 1, 3) }), async ({ method, path, req }, hangUpAfter) => {
        const b = build(path, req)
        const before = countAll()
        const changesBefore = totalChanges()
        let res: Awaited<ReturnType<typeof undiciRequest>>
        const started = performance.now()
        try {
          requestCount++
          res = await clientRequest(base + b.url, { method: b.method as 'GET', headers: b.headers, ...(b.payload === undefined ? {} : { body: b.payload }) })
        } catch (error) {
          // The client refused to send it (an invalid URL or header value): nothing reached the server.
          const code = (error as { code?: string }).code ?? ''
          if (code.startsWith('UND_ERR_INVALID') || code === 'UND_ERR_NOT_SUPPORTED' || error instanceof TypeError) return
          // A body over 1 MiB refused before it was read (413, or a 400 for its encoding): the server
          // answers and closes the connection (decision 030), and the client may see the close while
          // it still writes. The server must still answer the next request.
          if ((b.payload?.length ?? 0) > MiB && ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'].includes(code)) {
            closedEarly++
            const health = await clientRequest(`${base}/healthz`)
            await health.body.text()
            expect(health.statusCode).toBeLessThan(500)
            return
          }
          throw error
        }
        const text = await res.body.text()
        const where = `socket ${describeRequest(b)} -> ${res.statusCode} ${text.slice(0, 500)}`
        record(`socket ${method.toUpperCase()} ${path}`, res.statusCode)
        checkHolds(`${method.toUpperCase()} ${path}`, b, res.statusCode, where, performance.now() - started)
        expect(res.statusCode, where).toBeLessThan(500)
        if (res.statusCode >= 400) {
          expectEnvelope({ statusCode: res.statusCode, headers: res.headers, body: text } as unknown as LightMyRequestResponse, where, b.url)
          expect(countAll(), `rows changed by a rejected request: ${where}`).toEqual(before)
          expect(totalChanges() - changesBefore, `rows written by a rejected request: ${where}`).toBe(0)
        }
        await keepFixtures(path, b, res.statusCode)
        expect(await settle(), `still running after ${where}`).toBe(true)
        if (hangUpAfter !== null) {
          // A slow turn whose client reads `hangUpAfter` chunks, then closes the connection.
          const chat = self.ids.chat[1]!
          const controller = new AbortController()
          requestCount++
          const turn = await clientRequest(`${base}/api/v1/chats/${chat}/responses`, {
            method: 'POST',
            headers: { ...self.org.auth, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 5\n/long 20' }] }),
            signal: controller.signal,
          })
          expect(turn.statusCode).toBeLessThan(500)
          let chunks = 0
          try {
            for await (const _chunk of turn.body) if (++chunks > hangUpAfter) break
          } catch {
            // aborted
          }
          controller.abort()
          turn.body.destroy()
          expect(await settle(), 'a run stayed running after its client hung up').toBe(true)
          const next = await ctx.app.inject({ url: `/api/v1/chats/${chat}/history?limit=1`, headers: self.org.auth })
          expect(next.statusCode, next.body).toBe(200)
        }
      }),
      { numRuns: Math.ceil(RUNS / 2), ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: false },
    )
  })

  // Accepted requests racing on the same resources: turns on one chat (the same idempotency key
  // too), deleting the chat under them, cancelling, publishing and activating one kind at once.
  it('racing writes on the same chat and configuration', { timeout: Math.max(30_000, RUNS * 400) }, async () => {
    type Action =
      | { kind: 'turn'; chat: number; text: string; key: string | null }
      | { kind: 'delete'; chat: number }
      | { kind: 'cancel' }
      | { kind: 'publish'; config: (typeof KINDS)[number] }
      | { kind: 'activate'; config: (typeof KINDS)[number]; index: number }
      | { kind: 'history'; chat: number }
    const chatIndex = fc.nat(1)
    const action: fc.Arbitrary<Action> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('turn' as const),
          chat: chatIndex,
          text: fc.constantFrom('hello', '/tool lookup {"q":1}', '/long 30', '/think hm\nok', '/refuse', '/fail-mid', '/slow 3\nhi'),
          key: fc.option(fc.constantFrom('race-1', 'race-2'), { nil: null }),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), chat: chatIndex }) },
      { weight: 2, arbitrary: fc.constant({ kind: 'cancel' as const }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('publish' as const), config: fc.constantFrom(...KINDS) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('activate' as const), config: fc.constantFrom(...KINDS), index: fc.nat(1) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('history' as const), chat: chatIndex }) },
    )
    const self = orgs[0]!
    const bodies: Record<(typeof KINDS)[number], unknown> = {
      instructions: { body: 'Be brief.', mode: 'replace' },
      tools: { mode: 'replace', definitions: [{ name: 'race', input_schema: { type: 'object' } }] },
      retention: { rules: { version: 1 } },
      budgets: { budget: { version: 3, headroom: 0.2 } },
    }
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 2, maxLength: 6 }), async (actions) => {
        const chats = [(await call('POST', '/api/v1/chats', self.org, {})).id, (await call('POST', '/api/v1/chats', self.org, {})).id]
        // A run to cancel: the newest of the batch's chats, running or not.
        const newest = () =>
          (ctx.store.db.prepare('SELECT id FROM runs WHERE chat_id IN (?, ?) ORDER BY created_at DESC LIMIT 1').get(chats[0], chats[1]) as { id: string } | undefined)?.id ?? MISSING
        const requests = actions.map((a): { method: string; url: string; payload?: unknown } => {
          switch (a.kind) {
            case 'turn':
              return { method: 'POST', url: `/api/v1/chats/${chats[a.chat]}/responses`, payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: a.text }], ...(a.key ? { idempotency_key: `${a.key}-${chats[0]}` } : {}) } }
            case 'delete':
              return { method: 'DELETE', url: `/api/v1/chats/${chats[a.chat]}` }
            case 'cancel':
              return { method: 'POST', url: '/api/v1/runs/{newest}/cancel' }
            case 'publish':
              return { method: 'POST', url: `/api/v1/config/${a.config}`, payload: bodies[a.config] }
            case 'activate':
              return { method: 'POST', url: `/api/v1/config/${a.config}/${self.ids[a.config][a.index % self.ids[a.config].length]}/activate` }
            case 'history':
              return { method: 'GET', url: `/api/v1/chats/${chats[a.chat]}/history?include=full` }
          }
        })
        const answers = await Promise.all(
          requests.map(async (r) => {
            requestCount++
            if (r.url.includes('{newest}')) {
              // Sent a moment later, when the batch's turns have started.
              await new Promise((resolve) => setTimeout(resolve, 3))
              r.url = r.url.replace('{newest}', newest())
            }
            return ctx.app.inject({ method: r.method as 'GET', url: r.url, headers: self.org.auth, ...(r.payload === undefined ? {} : { payload: r.payload as object }) })
          }),
        )
        answers.forEach((res, i) => {
          const where = `${requests[i]!.method} ${requests[i]!.url} ${JSON.stringify(requests[i]!.payload ?? '')} -> ${res.statusCode} ${res.body.slice(0, 500)}`
          record(`race ${actions[i]!.kind}`, res.statusCode)
          expect(res.statusCode, where).toBeLessThan(500)
          if (res.statusCode >= 400) expectEnvelope(res, where, requests[i]!.url)
          else if (res.headers['content-type']?.toString().startsWith('text/event-stream')) expect(() => parseSse(res.body), where).not.toThrow()
        })
        // Every run the batch started has ended.
        expect(await settle(), `a run is still running after ${JSON.stringify(actions)}`).toBe(true)
      }),
      { numRuns: Math.ceil(RUNS / 2), ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: false },
    )
  })

  // Nested bodies (issue 22 item 1) to every operation's path and to paths that are none, with the
  // caller's key, without one and with a wrong one, by any method, through app.inject and over a
  // socket: never a 5xx; a 4xx in the envelope, with nothing written, for an unknown path and for a
  // body past 256 levels that the method reads (decision 030: route, key, size, then depth).
  it('nested bodies to any path, with and without a key', { timeout: Math.max(30_000, RUNS * 400) }, async () => {
    const base = await listening()
    const self = orgs[0]!
    const UNKNOWN = ['/nothing', '/api/v1/nothing', '/api/v2/chats', '/api/v1/chats/x/y/z', '/openapi.json/x', '/api/v1/chats/%ED%A0%80/responses', '/healthz/x']
    // The operation's own method mostly, sometimes another.
    const methodArb = (own: string) => fc.oneof({ weight: 4, arbitrary: fc.constant(own) }, { weight: 1, arbitrary: fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'GET') })
    const target = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...operations).chain(({ method, path }) => methodArb(method.toUpperCase()).map((m) => ({ known: true, method: m, path }))) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...UNKNOWN), methodArb('POST')).map(([path, m]) => ({ known: false, method: m, path })) },
    )
    // Bodies over 1 MiB only where 413 is documented: operations with a body, paths that are none,
    // and methods a path does not take (405).
    const withBody = target.chain((t) => {
      const op = t.known ? doc.paths[t.path]![t.method.toLowerCase()] : undefined
      return nestedBodyArb(op !== undefined && op.requestBody === undefined ? MiB : undefined).map((body) => ({ t, body }))
    })
    await fc.assert(
      fc.asyncProperty(withBody, fc.constantFrom('key', 'none', 'wrong'), fc.boolean(), async ({ t, body }, auth, overSocket) => {
        const method = t.method
        const url = t.path.replace(/\{(\w+)\}/g, (_m, param: string) => {
          const kind = idKindOf(t.path, param)
          return kind === 'model' ? 'sandbox/echo' : self.ids[kind][0]!
        })
        const headers: Record<string, string> = {}
        if (auth === 'key') headers.authorization = self.org.auth.authorization!
        if (auth === 'wrong') headers.authorization = 'Bearer pk_live_wrong'
        if (body.contentType !== '') headers['content-type'] = body.contentType
        const payload = nestedText(body)
        const b: Built = { method, url, headers, payload, actor: auth === 'key' ? 0 : null, ...judge(method, url, headers['content-type'], body) }
        if (!t.known) b.mustRefuse.push('an unknown path')
        nestedElsewhere++
        const before = countAll()
        const changesBefore = totalChanges()
        const started = performance.now()
        let status: number
        let text: string
        let contentType: string | undefined
        requestCount++
        if (overSocket) {
          try {
            const res = await clientRequest(base + url, { method: method as 'GET', headers, ...(method === 'GET' ? {} : { body: payload }) })
            status = res.statusCode
            contentType = res.headers['content-type']?.toString()
            text = await res.body.text()
          } catch (error) {
            const code = (error as { code?: string }).code ?? ''
            if (payload.length > MiB && ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'].includes(code)) {
              closedEarly++
              const health = await clientRequest(`${base}/healthz`)
              await health.body.text()
              expect(health.statusCode).toBeLessThan(500)
              return
            }
            throw error
          }
        } else {
          const res = await ctx.app.inject({ method: method as 'GET', url, headers, payload })
          status = res.statusCode
          contentType = res.headers['content-type']?.toString()
          text = res.body
        }
        const where = `${overSocket ? 'socket ' : ''}${describeRequest(b)} -> ${status} ${text.slice(0, 500)}`
        record(`nested ${method} ${t.path}`, status)
        checkHolds(`nested ${method} ${t.path}`, b, status, where, performance.now() - started)
        expect(status, where).toBeLessThan(500)
        if (status >= 400) {
          expectEnvelope({ statusCode: status, headers: { 'content-type': contentType }, body: text } as unknown as LightMyRequestResponse, where, url)
          expect(countAll(), `rows changed by a rejected request: ${where}`).toEqual(before)
          expect(totalChanges() - changesBefore, `rows written by a rejected request: ${where}`).toBe(0)
        }
        await keepFixtures(t.path, b, status)
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: false },
    )
  })

  // A long run shows that the generators reach what issue 22 names on every operation: a lone
  // surrogate in the body of each operation that takes one and in the path or query of each that
  // has parameters, a nested body on each, and attachments of 1 MiB or more on the turn route.
  it('reaches lone surrogates, nested bodies and large attachments on every operation', () => {
    if (RUNS < 500 || requestCount < operations.length * RUNS) return
    const missing: string[] = []
    for (const { method, path } of operations) {
      const op = doc.paths[path]![method]!
      const name = `${method.toUpperCase()} ${path}`
      const c = reach.perOp.get(name)
      if (op.requestBody && !(c && c.illFormed > 0)) missing.push(`${name}: no body with a lone surrogate`)
      if ((op.parameters ?? []).some((p) => p.in === 'path' || p.in === 'query') && !(c && c.urlSurrogate > 0)) missing.push(`${name}: no lone surrogate in the path or query`)
      if (!(c && c.nested > 0)) missing.push(`${name}: no nested body`)
    }
    const turn = reach.perOp.get('POST /api/v1/chats/{chat_id}/responses')
    if (!(turn && turn.attachments > 0) || reach.attachmentsOver1MiB === 0) missing.push('the turn route: no attachment of 1 MiB or more')
    expect(missing).toEqual([])
  })
})
