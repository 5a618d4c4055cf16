import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'

/**
 * A TEST DOUBLE of Consul's session and KV HTTP API: exactly the subset LiteFS's Consul leaser
 * (litefs v0.5.14, consul/consul.go, through hashicorp/consul/api v1.11) calls, on a loopback
 * port, so that a test cluster elects its LiteFS primary as it would against Consul (issue 20).
 * Consul itself is not available on this machine; everything else in the cluster tests is real.
 *
 * The subset, with Consul's semantics:
 * - `PUT /v1/session/create` {Name, Node?, Behavior, LockDelay ("1000ms" as the Go client sends, or
 *   nanoseconds), TTL ("10s")} → {"ID"}. Consul refuses a TTL below its `session_ttl_min` (10 s
 *   by default; `minSessionTtlMs` here, lowered by tests as an agent setting would be).
 * - `PUT /v1/session/renew/<id>` → [entry], or 404 once the session is gone.
 * - `PUT /v1/session/destroy/<id>` → true.
 * - Sessions not renewed expire: Consul invalidates a session between TTL and twice its TTL after
 *   its last renewal (`ttlMultiplier`, 2 by default: the latest Consul allows).
 * - Invalidation (expiry, destroy) applies the session's behavior to the keys it holds: `delete`
 *   removes them, `release` unlocks them; either way each key is under the session's lock-delay:
 *   no session can acquire it until the delay has passed. A plain release sets no lock-delay.
 * - `GET /v1/kv/<key>` → [{Key, Value (base64), Session?, Flags, LockIndex, CreateIndex, ModifyIndex}] or 404.
 * - `PUT /v1/kv/<key>?acquire=<session>` (body: the value) → true/false; `?release=<session>`
 *   → true/false (the value becomes the body, as Consul's unlock writes it); a plain PUT sets the value.
 * - Every answer carries `X-Consul-Index` (one index, bumped by every write), and reads carry
 *   `X-Consul-KnownLeader: true` and `X-Consul-LastContact: 0`, which the Go client parses.
 *
 * Anything else (blocking queries, CAS, catalog, other endpoints) answers 400 and is recorded in
 * `unsupported`, so a test can tell that LiteFS asked for something this double does not model.
 */
export type ConsulLeaseService = {
  /** `http://127.0.0.1:<port>`: LiteFS's `lease.consul.url`. */
  url: string
  port: number
  /** The key's holder now: its session and value (LiteFS writes {"hostname","advertise-url"} JSON), or null when unheld. */
  holder: (key: string) => KeyHolder | null
  /** Every acquisition, release and invalidation so far, in order. */
  events: () => LeaseEvent[]
  /**
   * The acquisitions of `key` that changed its holder (a new session, or the same session handed
   * over to another hostname): one per primary elected or handed over.
   */
  acquisitions: (key: string) => LeaseEvent[]
  /** Sessions still alive. */
  sessions: () => SessionInfo[]
  /** Invalidates a session now, as its TTL running out would (behavior and lock-delay apply). */
  expire: (sessionId: string) => void
  /** Requests outside the modelled subset (each answered 400). */
  unsupported: () => string[]
  /** Consul's current index. */
  index: () => number
  close: () => Promise<void>
}

export type KeyHolder = { key: string; session: string | null; value: string; hostname: string | null; lockIndex: number; modifyIndex: number }

export type LeaseEvent = {
  /** Wall-clock milliseconds. */
  at: number
  /** `acquired`: the key has a new holder; `re-acquired`: the same session and value again. */
  kind: 'session-created' | 'acquired' | 're-acquired' | 'acquire-refused' | 'released' | 'session-destroyed' | 'session-expired' | 'key-deleted'
  session: string
  key?: string
  /** For acquisitions: the hostname in LiteFS's value (this cluster's `host:port` of the node's API). */
  hostname?: string | null
  /** For refused acquisitions: why. */
  reason?: 'held' | 'lock-delay'
}

export type SessionInfo = { id: string; name: string; node: string; behavior: 'delete' | 'release'; ttlMs: number; lockDelayMs: number; renewedAt: number }

export type ConsulLeaseServiceOptions = {
  /** Consul's `session_ttl_min`: sessions asking for less are refused. Default 10 s, as Consul's. */
  minSessionTtlMs?: number
  /** A session is invalidated this many TTLs after its last renewal. Default 2, as Consul allows. */
  ttlMultiplier?: number
  /** Listen on this port (default: any free one), e.g. to come back where LiteFS expects it. */
  port?: number
}

type Session = SessionInfo & { timer: NodeJS.Timeout | null; createIndex: number }
type Entry = { key: string; value: Buffer; flags: number; session: string | null; lockIndex: number; createIndex: number; modifyIndex: number }

/** Consul's duration strings ("10s", "1000ms", "1m30s", "1.5h"); a bare number is nanoseconds. */
export function parseConsulDuration(value: unknown): number {
  if (typeof value === 'number') return value / 1e6
  if (typeof value !== 'string' || value === '') throw new Error(`not a duration: ${JSON.stringify(value)}`)
  if (/^\d+$/.test(value)) return Number(value) / 1e6
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }
  let ms = 0
  let rest = value
  while (rest !== '') {
    const match = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest)
    if (!match) throw new Error(`not a duration: ${JSON.stringify(value)}`)
    ms += Number(match[1]) * units[match[2]!]!
    rest = rest.slice(match[0].length)
  }
  return ms
}

const goDuration = (ms: number) => (ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`)

export async function startConsulLeaseService(options: ConsulLeaseServiceOptions = {}): Promise<ConsulLeaseService> {
  const minTtlMs = options.minSessionTtlMs ?? 10_000
  const ttlMultiplier = options.ttlMultiplier ?? 2
  const sessions = new Map<string, Session>()
  const kv = new Map<string, Entry>()
  /** Per key: until when acquisitions are refused after a holder's session was invalidated. */
  const lockDelayUntil = new Map<string, number>()
  const events: LeaseEvent[] = []
  const unsupported: string[] = []
  let index = 1

  const hostnameOf = (value: Buffer): string | null => {
    try {
      const parsed = JSON.parse(value.toString('utf8')) as { hostname?: unknown }
      return typeof parsed.hostname === 'string' ? parsed.hostname : null
    } catch {
      return null
    }
  }
  const log = (event: Omit<LeaseEvent, 'at'>) => events.push({ at: Date.now(), ...event })

  const arm = (session: Session) => {
    if (session.timer) clearTimeout(session.timer)
    session.timer = setTimeout(() => invalidate(session.id, 'session-expired'), session.ttlMs * ttlMultiplier)
    session.timer.unref()
  }

  function invalidate(id: string, kind: 'session-expired' | 'session-destroyed') {
    const session = sessions.get(id)
    if (!session) return
    if (session.timer) clearTimeout(session.timer)
    sessions.delete(id)
    index++
    log({ kind, session: id })
    for (const entry of [...kv.values()]) {
      if (entry.session !== id) continue
      if (session.lockDelayMs > 0) lockDelayUntil.set(entry.key, Date.now() + session.lockDelayMs)
      if (session.behavior === 'delete') {
        kv.delete(entry.key)
        log({ kind: 'key-deleted', session: id, key: entry.key })
      } else {
        entry.session = null
        entry.modifyIndex = index
        log({ kind: 'released', session: id, key: entry.key })
      }
    }
  }

  const sessionEntry = (s: Session) => ({
    ID: s.id,
    Name: s.name,
    Node: s.node,
    LockDelay: s.lockDelayMs * 1e6,
    Behavior: s.behavior,
    TTL: goDuration(s.ttlMs),
    NodeChecks: [],
    ServiceChecks: null,
    CreateIndex: s.createIndex,
    ModifyIndex: s.createIndex,
  })

  const kvEntry = (e: Entry) => ({
    LockIndex: e.lockIndex,
    Key: e.key,
    Flags: e.flags,
    Value: e.value.length === 0 ? null : e.value.toString('base64'),
    ...(e.session ? { Session: e.session } : {}),
    CreateIndex: e.createIndex,
    ModifyIndex: e.modifyIndex,
  })

  const send = (res: ServerResponse, status: number, body: unknown, read = false) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body)
    res.setHeader('X-Consul-Index', String(index))
    if (read) {
      res.setHeader('X-Consul-KnownLeader', 'true')
      res.setHeader('X-Consul-LastContact', '0')
    }
    res.setHeader('Content-Type', typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json')
    res.writeHead(status)
    res.end(text)
  }

  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://consul')
    const path = url.pathname
    const params = url.searchParams
    const refuse = () => {
      unsupported.push(`${req.method} ${req.url}`)
      send(res, 400, `not modelled by the Consul lease test double: ${req.method} ${req.url}\n`)
    }
    // Query options the Go client adds only when configured (datacenter, consistency, token) are ignored.
    const known = new Set(['dc', 'stale', 'consistent', 'acquire', 'release', 'flags'])
    for (const name of params.keys()) if (!known.has(name)) return refuse()

    if (req.method === 'PUT' && path === '/v1/session/create') {
      let spec: Record<string, unknown>
      try {
        spec = body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as Record<string, unknown>)
      } catch {
        return send(res, 400, 'Request decode failed\n')
      }
      const ttlMs = spec.TTL === undefined || spec.TTL === '' ? 0 : parseConsulDuration(spec.TTL)
      if (ttlMs === 0) return refuse() // sessions without a TTL (health-check bound) are not modelled
      if (ttlMs < minTtlMs || ttlMs > 86_400_000) {
        return send(res, 400, `Invalid Session TTL '${String(spec.TTL)}', must be between [${goDuration(minTtlMs)}=24h0m0s]\n`)
      }
      const behavior = (spec.Behavior ?? 'release') as string
      if (behavior !== 'delete' && behavior !== 'release') return send(res, 400, `Invalid Behavior setting '${behavior}'\n`)
      const lockDelayMs = spec.LockDelay === undefined ? 15_000 : parseConsulDuration(spec.LockDelay)
      if (lockDelayMs > 60_000) return send(res, 400, 'Invalid LockDelay, must be at most 60s\n')
      index++
      const session: Session = {
        id: randomUUID(),
        name: String(spec.Name ?? ''),
        node: String(spec.Node ?? 'consul-lease-test-double'),
        behavior,
        ttlMs,
        lockDelayMs,
        renewedAt: Date.now(),
        timer: null,
        createIndex: index,
      }
      sessions.set(session.id, session)
      arm(session)
      log({ kind: 'session-created', session: session.id })
      return send(res, 200, { ID: session.id })
    }

    let match = /^\/v1\/session\/(renew|destroy)\/([^/]+)$/.exec(path)
    if (req.method === 'PUT' && match) {
      const [, action, id] = match as unknown as [string, 'renew' | 'destroy', string]
      const session = sessions.get(id)
      if (action === 'destroy') {
        invalidate(id, 'session-destroyed')
        return send(res, 200, true)
      }
      if (!session) return send(res, 404, `Session id '${id}' not found\n`)
      session.renewedAt = Date.now()
      arm(session)
      return send(res, 200, [sessionEntry(session)])
    }

    match = /^\/v1\/kv\/(.+)$/.exec(path)
    if (match) {
      const key = decodeURIComponent(match[1]!)
      const entry = kv.get(key)
      if (req.method === 'GET') {
        if (params.has('acquire') || params.has('release')) return refuse()
        return entry ? send(res, 200, [kvEntry(entry)], true) : send(res, 404, '', true)
      }
      if (req.method !== 'PUT') return refuse()
      const flags = Number(params.get('flags') ?? 0)
      const acquire = params.get('acquire')
      const release = params.get('release')
      if (acquire !== null) {
        const session = sessions.get(acquire)
        if (!session) return send(res, 500, `invalid session "${acquire}"\n`)
        if (entry && entry.session !== null && entry.session !== acquire) {
          log({ kind: 'acquire-refused', session: acquire, key, reason: 'held' })
          return send(res, 200, false)
        }
        const delayedUntil = lockDelayUntil.get(key) ?? 0
        if ((!entry || entry.session === null) && Date.now() < delayedUntil) {
          log({ kind: 'acquire-refused', session: acquire, key, reason: 'lock-delay' })
          return send(res, 200, false)
        }
        index++
        const sameSession = entry?.session === acquire
        // A handoff re-acquires with the same session and the new primary's value: a new holder.
        const reacquired = sameSession && hostnameOf(entry!.value) === hostnameOf(body)
        const next: Entry = entry ?? { key, value: body, flags, session: null, lockIndex: 0, createIndex: index, modifyIndex: index }
        next.value = body
        next.flags = flags
        next.modifyIndex = index
        if (!sameSession) next.lockIndex++
        next.session = acquire
        kv.set(key, next)
        log({ kind: reacquired ? 're-acquired' : 'acquired', session: acquire, key, hostname: hostnameOf(body) })
        return send(res, 200, true)
      }
      if (release !== null) {
        if (!entry || entry.session !== release) return send(res, 200, false)
        index++
        entry.session = null
        entry.value = body
        entry.flags = flags
        entry.modifyIndex = index
        log({ kind: 'released', session: release, key })
        return send(res, 200, true)
      }
      index++
      if (entry) {
        entry.value = body
        entry.flags = flags
        entry.modifyIndex = index
      } else {
        kv.set(key, { key, value: body, flags, session: null, lockIndex: 0, createIndex: index, modifyIndex: index })
      }
      return send(res, 200, true)
    }
    return refuse()
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks))
      } catch (error) {
        send(res, 500, `${(error as Error).message}\n`)
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const port = (server.address() as AddressInfo).port

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    holder(key) {
      const entry = kv.get(key)
      if (!entry) return null
      return {
        key,
        session: entry.session,
        value: entry.value.toString('utf8'),
        hostname: hostnameOf(entry.value),
        lockIndex: entry.lockIndex,
        modifyIndex: entry.modifyIndex,
      }
    },
    events: () => [...events],
    acquisitions: (key) => events.filter((e) => e.key === key && e.kind === 'acquired'),
    sessions: () => [...sessions.values()].map(({ timer: _timer, createIndex: _createIndex, ...info }) => info),
    expire: (id) => invalidate(id, 'session-expired'),
    unsupported: () => [...unsupported],
    index: () => index,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions.values()) if (session.timer) clearTimeout(session.timer)
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
