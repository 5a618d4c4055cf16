import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { openDatabase } from '../src/store/database.ts'
import { SERVER_AUTOCHECKPOINT_PAGES, startWalCheckpointer } from '../src/store/wal-checkpointer.ts'

// The baselines: a bare Fastify app in its own process, no logging, no plugins.
const app = Fastify({ logger: false })

// Foundation: a small JSON body.
app.get('/', async () => ({ hello: 'world' }))

// Turns: a bare SSE route. bench/turns.ts PUTs the frames of one real Parley turn here first, so this
// route streams the same events, with the same names and sizes, the way src/http/sse/write-run-stream.ts
// does (hijacked reply, same headers, one write per frame), and none of the work behind them.
// `POST /sse` writes them all at once; `POST /sse?paced=1` yields to the event loop before each frame,
// so each is its own write on the wire, as when frames come from a provider stream.
type Frame = { event: string; data: unknown }
let frames: string[] = []
app.put('/sse-frames', async (request) => {
  frames = (request.body as Frame[]).map((f) => `event: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`)
  return { frames: frames.length }
})
/** The response hijacked and its head written as src/http/sse/write-run-stream.ts writes it. */
function openStream(request: FastifyRequest, reply: FastifyReply) {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(request.id),
  })
  return res
}
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
app.post('/sse', async (request, reply) => {
  const res = openStream(request, reply)
  const paced = (request.query as { paced?: string }).paced === '1'
  for (const frame of frames) {
    if (paced) await nextTurn()
    if (res.destroyed) return
    res.write(frame)
  }
  res.end()
})

// The durable floor (issue 34): the bare route's frames, plus the rows a sandbox turn writes, on
// Parley's schema (its migrations, through openDatabase) with raw prepared better-sqlite3 statements,
// in two transactions per turn: the input and its run before the first byte, the answer and its
// accounting after the last delta. No group commit, no caching, no actor: what any durable chat
// server must at least do per turn. The database is set up as src/main.ts sets up the server's
// (WAL, the same autocheckpoint backstop, checkpoints on the checkpointer's thread), so the floor pays
// no checkpoint on its event loop that Parley does not. Only when DATA_DIR is set (bench/turns.ts seeds
// the organisation and the chats through the store first).
if (process.env.DATA_DIR) {
  const file = join(process.env.DATA_DIR, 'parley.db')
  const db = openDatabase(file, { autocheckpointPages: SERVER_AUTOCHECKPOINT_PAGES })
  startWalCheckpointer(file, (message) => console.error(`WAL checkpoint failed: ${message}`))
  const insertPart = db.prepare(
    `INSERT INTO parts (id, chat_id, run_id, kind, body, user_metadata, created_at, tokens) VALUES (?, ?, ?, ?, ?, '{}', ?, ?)`,
  )
  const bumpChat = db.prepare('UPDATE chats SET part_count = part_count + 1, updated_at = ? WHERE id = ?')
  const insertRun = db.prepare(
    `INSERT INTO runs (id, org_id, chat_id, origin, status, model_id, model_name, created_at, manifest, lease_owner, lease_expires_at)
     VALUES (?, ?, ?, 'customer', 'running', 'sandbox/echo', 'sandbox/echo', ?, '{}', 'floor', ?)`,
  )
  const finishRun = db.prepare(
    `UPDATE runs SET status = 'succeeded', completed_at = ?, stop_reason = 'end_turn', usage = ?, cost_units = ?, settled_at = ?,
       lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND status = 'running'`,
  )
  const insertEntry = db.prepare(
    `INSERT INTO balance_entries (id, org_id, entry_type, amount_units, currency, occurred_at, run_id, model_id, model_name,
       input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens)
     VALUES (?, ?, 'usage', ?, 'USD', ?, ?, 'sandbox/echo', 'sandbox/echo', 10, 40, 0, 0, 0)`,
  )
  const addToTotal = db.prepare(
    `INSERT INTO org_balances (org_id, amount_units) VALUES (?, ?) ON CONFLICT (org_id) DO UPDATE SET amount_units = amount_units + excluded.amount_units`,
  )
  const rollUp = db.prepare(
    `INSERT INTO usage_hourly VALUES (?, ?, 'usage', 'sandbox/echo', 'sandbox/echo', '', '', 1, 1, 10, 40, 0, 0, 0, ?)
     ON CONFLICT (org_id, hour, entry_type, model_id, model_name, namespace, api_key_id) DO UPDATE SET
       entries = entries + 1, runs = runs + 1, input_tokens = input_tokens + 10, output_tokens = output_tokens + 40,
       cost_units = cost_units + excluded.cost_units`,
  )
  const admit = db.transaction((org: string, chat: string, runId: string, text: string, now: string) => {
    insertPart.run(randomUUID(), chat, null, 'prompt', JSON.stringify({ type: 'prompt', text }), now, 10)
    insertRun.run(runId, org, chat, now, new Date(Date.now() + 30_000).toISOString())
    bumpChat.run(now, chat)
  })
  const settle = db.transaction((org: string, chat: string, runId: string, answer: string, now: string) => {
    insertPart.run(randomUUID(), chat, runId, 'message', JSON.stringify({ type: 'message', text: answer }), now, 40)
    bumpChat.run(now, chat)
    const cost = 50n
    finishRun.run(now, '{"input_tokens":10,"output_tokens":40}', cost, now, runId)
    insertEntry.run(randomUUID(), org, -cost, now, runId)
    addToTotal.run(org, -cost)
    rollUp.run(org, `${now.slice(0, 13)}:00:00.000Z`, cost)
  })
  app.post('/durable', async (request, reply) => {
    const { org, chat } = request.query as { org: string; chat: string }
    const { input } = request.body as { input: { text: string }[] }
    const runId = randomUUID()
    admit(org, chat, runId, input[0]!.text, new Date().toISOString())
    const res = openStream(request, reply)
    // The answer's frames, then the settlement, then the last frame (Parley's `done` follows its settlement).
    for (const frame of frames.slice(0, -1)) res.write(frame)
    await new Promise<void>((resolve) => setImmediate(resolve))
    settle(org, chat, runId, 'x'.repeat(200), new Date().toISOString())
    if (!res.destroyed) res.end(frames.at(-1))
  })
}

await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().finally(() => process.exit(0)))
}
