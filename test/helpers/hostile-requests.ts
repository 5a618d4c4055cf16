/**
 * The hostile requests of issue 22 items 1–3, each as a case that sends its requests to a running
 * server and reports the statuses it got. Shared by the stall test (test/e2e/stall.test.ts), which
 * checks the answers and that `/healthz` kept answering, and the stall benchmark (bench/stall.ts),
 * which measures by how much each case delays a `/healthz` poller beside a control.
 */
import { Buffer } from 'node:buffer'
import { Agent, request } from 'undici'

export type HostileTarget = {
  url: string
  /** `authorization` header of a funded organisation. */
  auth: Record<string, string>
  /** A chat of that organisation with no running run, made fresh for each case. */
  newChat: () => Promise<string>
}

export type HostileOutcome = {
  /** Each request's status, in the order sent. */
  statuses: number[]
  /** The last SSE event of each turn stream read to its end (`done`, `error`), else null. */
  terminals: Array<string | null>
}

export type HostileCase = {
  name: string
  /** What each request must be answered with. */
  expected: number
  run: (target: HostileTarget, agent: Agent) => Promise<HostileOutcome>
}

const MiB = 1024 * 1024

/** `[` × n then `]` × n: nesting 2n bytes deep, valid JSON. */
export function nestedArrays(bytes: number): Buffer {
  const half = bytes >> 1
  const body = Buffer.alloc(half * 2, '[')
  body.fill(']', half)
  return body
}

/** A whole PDF (header, filler, %%EOF) of exactly `bytes`. */
export function pdfOf(bytes: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n', 'latin1')
  const tail = Buffer.from('\n%%EOF\n', 'latin1')
  const file = Buffer.alloc(bytes, 'x')
  head.copy(file, 0)
  tail.copy(file, bytes - tail.length)
  return file
}

/** A PNG whose header and end are whole (signature, IHDR, one IDAT of filler, IEND) of `bytes`. */
export function pngOf(bytes: number, side = 64): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const out = Buffer.alloc(12 + data.length)
    out.writeUInt32BE(data.length, 0)
    out.write(type, 4, 'latin1')
    data.copy(out, 8)
    // Checks read the header and look for IEND; the CRC is not verified by them (IEND's is fixed).
    if (type === 'IEND') out.writeUInt32BE(0xae426082, 8 + data.length)
    return out
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(side, 0)
  ihdr.writeUInt32BE(side, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  const fixed = signature.length + 25 + 12 + 12
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', Buffer.alloc(bytes - fixed, 7)), chunk('IEND', Buffer.alloc(0))])
}

/** Sends one request and reads its answer whole; for a turn's stream, notes the last event. */
async function send(agent: Agent, url: string, path: string, headers: Record<string, string>, body: Buffer | string): Promise<{ status: number; terminal: string | null }> {
  const res = await request(`${url}${path}`, {
    dispatcher: agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  })
  const text = await res.body.text()
  const events = res.statusCode === 200 ? [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]!) : []
  return { status: res.statusCode, terminal: events.at(-1) ?? null }
}

async function all(sends: Array<Promise<{ status: number; terminal: string | null }>>): Promise<HostileOutcome> {
  const answers = await Promise.all(sends)
  return { statuses: answers.map((a) => a.status), terminals: answers.map((a) => a.terminal) }
}

/** `length` random lowercase letters, unbroken: the costliest text for the tokenizer (deterministic). */
export function unbrokenLetters(length: number, seed = 1): string {
  let state = seed
  const out = Buffer.alloc(length)
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
    out[i] = 97 + ((state >> 8) % 26)
  }
  return out.toString('latin1')
}

const turnPath = (chatId: string) => `/api/v1/chats/${chatId}/responses`
const turnWith = (media: Array<{ mime: string; bytes: Buffer }>) =>
  JSON.stringify({
    model: 'sandbox/echo',
    input: [{ type: 'prompt', text: 'what is attached?', media: media.map((m) => ({ mime: m.mime, data_base64: m.bytes.toString('base64') })) }],
  })

export const HOSTILE_CASES: readonly HostileCase[] = [
  {
    name: 'a 16 MB nested body to the turn route',
    expected: 422,
    run: async (t, agent) => all([send(agent, t.url, turnPath(await t.newChat()), t.auth, nestedArrays(16_000_000))]),
  },
  {
    name: 'ten concurrent 1 MB nested bodies to an unknown path without a key',
    expected: 404,
    run: async (t, agent) => {
      const body = nestedArrays(1_000_000)
      return all(Array.from({ length: 10 }, () => send(agent, t.url, '/api/v1/nothing', {}, body)))
    },
  },
  {
    name: 'a 20 MiB attachment (PDF)',
    expected: 200,
    run: async (t, agent) => all([send(agent, t.url, turnPath(await t.newChat()), t.auth, turnWith([{ mime: 'application/pdf', bytes: pdfOf(20 * MiB) }]))]),
  },
  {
    name: '20 × 1.2 MB attachments (PNG)',
    expected: 200,
    run: async (t, agent) => {
      const png = pngOf(1_200_000)
      return all([send(agent, t.url, turnPath(await t.newChat()), t.auth, turnWith(Array.from({ length: 20 }, () => ({ mime: 'image/png', bytes: png }))))])
    },
  },
  {
    name: '31 MiB of prompt text',
    expected: 422,
    run: async (t, agent) =>
      all([send(agent, t.url, turnPath(await t.newChat()), t.auth, JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: 'lorem ipsum '.repeat((31 * MiB) / 12) }] }))]),
  },
  {
    name: '1 MiB of unbroken letters (the tokenizer\'s costliest text)',
    expected: 200,
    run: async (t, agent) =>
      all([send(agent, t.url, turnPath(await t.newChat()), t.auth, JSON.stringify({ model: 'sandbox/echo-1m', input: [{ type: 'prompt', text: unbrokenLetters(MiB) }] }))]),
  },
  {
    name: '`/long 40000` (40,000 deltas)',
    expected: 200,
    run: async (t, agent) => all([send(agent, t.url, turnPath(await t.newChat()), t.auth, JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/long 40000' }] }))]),
  },
]
