import Fastify from 'fastify'

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
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
app.post('/sse', async (request, reply) => {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(request.id),
  })
  const paced = (request.query as { paced?: string }).paced === '1'
  for (const frame of frames) {
    if (paced) await nextTurn()
    if (res.destroyed) return
    res.write(frame)
  }
  res.end()
})

await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().finally(() => process.exit(0)))
}
