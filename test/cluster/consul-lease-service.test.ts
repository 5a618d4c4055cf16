import { afterEach, describe, expect, test } from 'vitest'
import { parseConsulDuration, startConsulLeaseService, type ConsulLeaseService } from '../helpers/consul-lease-service.ts'

/**
 * The Consul test double speaks the session/KV calls of LiteFS's leaser (through the Go client,
 * hashicorp/consul/api v1.11) with Consul's semantics: these are the calls and answers that client
 * sends and reads.
 */
describe('the Consul lease test double', () => {
  let consul: ConsulLeaseService
  afterEach(async () => consul?.close())

  const call = async (method: string, path: string, body?: string) => {
    const res = await fetch(`${consul.url}${path}`, { method, body })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
  }
  const value = (hostname: string) => JSON.stringify({ hostname, 'advertise-url': `http://${hostname}` })
  // As the Go client sends it: LockDelay as milliseconds in a duration string, TTL as a Go duration.
  const createSession = async (ttl = '200ms', lockDelay = '150ms') =>
    (await call('PUT', '/v1/session/create', JSON.stringify({ NodeChecks: [], Name: 'litefs', LockDelay: lockDelay, Behavior: 'delete', TTL: ttl }))).json().ID as string
  const acquire = async (session: string, hostname: string) => (await call('PUT', `/v1/kv/litefs/app?acquire=${session}`, value(hostname))).json() as boolean

  test('reads Go and Consul durations', () => {
    expect(parseConsulDuration('10s')).toBe(10_000)
    expect(parseConsulDuration('1000ms')).toBe(1_000)
    expect(parseConsulDuration('1m30s')).toBe(90_000)
    expect(parseConsulDuration(15_000_000_000)).toBe(15_000)
  })

  test('refuses a session TTL under its minimum, as Consul does under session_ttl_min', async () => {
    consul = await startConsulLeaseService()
    const refused = await call('PUT', '/v1/session/create', JSON.stringify({ Name: 'litefs', Behavior: 'delete', TTL: '2s', LockDelay: '1000ms' }))
    expect(refused.status).toBe(400)
    expect(refused.text).toContain("Invalid Session TTL '2s'")
  })

  test('one holder at a time; renewals keep it; the value and headers are what the Go client reads', async () => {
    consul = await startConsulLeaseService({ minSessionTtlMs: 100 })
    const a = await createSession()
    const b = await createSession()
    expect(await acquire(a, 'node-a:1')).toBe(true)
    expect(await acquire(b, 'node-b:1')).toBe(false)
    const got = await call('GET', '/v1/kv/litefs/app')
    expect(got.status).toBe(200)
    expect(Number(got.headers.get('x-consul-index'))).toBeGreaterThan(0)
    expect(got.headers.get('x-consul-knownleader')).toBe('true')
    expect(got.headers.get('x-consul-lastcontact')).toBe('0')
    const [entry] = got.json()
    expect(entry).toMatchObject({ Key: 'litefs/app', Session: a, LockIndex: 1 })
    expect(JSON.parse(Buffer.from(entry.Value, 'base64').toString('utf8'))).toEqual({ hostname: 'node-a:1', 'advertise-url': 'http://node-a:1' })
    // Renewing every half TTL (as LiteFS does) outlives several TTLs.
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      const renewed = await call('PUT', `/v1/session/renew/${a}`)
      expect(renewed.status).toBe(200)
      expect(renewed.json()[0]).toMatchObject({ ID: a, TTL: '200ms', Behavior: 'delete' })
    }
    expect(consul.holder('litefs/app')).toMatchObject({ session: a, hostname: 'node-a:1' })
    expect((await call('GET', '/v1/kv/litefs/other')).status).toBe(404)
    expect(consul.unsupported()).toEqual([])
  })

  test('an expired session loses its key (behavior delete), and the lock-delay holds the key before another session gets it', async () => {
    consul = await startConsulLeaseService({ minSessionTtlMs: 100, ttlMultiplier: 1 })
    const a = await createSession('200ms', '300ms')
    expect(await acquire(a, 'node-a:1')).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await call('PUT', `/v1/session/renew/${a}`)).status).toBe(404)
    expect((await call('GET', '/v1/kv/litefs/app')).status).toBe(404)
    const b = await createSession('10s')
    expect(await acquire(b, 'node-b:1')).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 250))
    expect(await acquire(b, 'node-b:1')).toBe(true)
    const kinds = consul.events().map((e) => e.kind + (e.reason ? `:${e.reason}` : ''))
    expect(kinds).toEqual(['session-created', 'acquired', 'session-expired', 'key-deleted', 'session-created', 'acquire-refused:lock-delay', 'acquired'])
    expect(consul.acquisitions('litefs/app').map((e) => e.hostname)).toEqual(['node-a:1', 'node-b:1'])
  })

  test('a destroyed session frees its key after the lock-delay; a release frees it at once; a handoff is a new holder on the same session', async () => {
    consul = await startConsulLeaseService({ minSessionTtlMs: 100 })
    const a = await createSession('10s', '200ms')
    expect(await acquire(a, 'node-a:1')).toBe(true)
    // LiteFS's handoff: the new primary re-acquires with the old primary's session and its own value.
    expect(await acquire(a, 'node-b:1')).toBe(true)
    expect(consul.holder('litefs/app')).toMatchObject({ session: a, hostname: 'node-b:1', lockIndex: 1 })
    expect((await call('PUT', `/v1/kv/litefs/app?release=${a}`)).json()).toBe(true)
    const b = await createSession('10s', '200ms')
    expect(await acquire(b, 'node-c:1')).toBe(true)
    expect((await call('PUT', `/v1/session/destroy/${b}`)).json()).toBe(true)
    expect(consul.holder('litefs/app')).toBeNull()
    const c = await createSession()
    expect(await acquire(c, 'node-a:1')).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 250))
    expect(await acquire(c, 'node-a:1')).toBe(true)
    expect(consul.acquisitions('litefs/app').map((e) => e.hostname)).toEqual(['node-a:1', 'node-b:1', 'node-c:1', 'node-a:1'])
    // An unknown session cannot acquire (Consul answers 500 "invalid session").
    expect((await call('PUT', '/v1/kv/litefs/app?acquire=00000000-0000-0000-0000-000000000000', 'x')).status).toBe(500)
  })

  test('a plain put and a get of another key (the cluster ID), and anything outside the subset is refused and recorded', async () => {
    consul = await startConsulLeaseService()
    expect((await call('PUT', '/v1/kv/litefs/app/clusterid', 'LFSC0123')).json()).toBe(true)
    const [entry] = (await call('GET', '/v1/kv/litefs/app/clusterid')).json()
    expect(Buffer.from(entry.Value, 'base64').toString('utf8')).toBe('LFSC0123')
    expect((await call('GET', '/v1/kv/litefs/app?index=3&wait=5s')).status).toBe(400)
    expect((await call('PUT', '/v1/catalog/register', '{}')).status).toBe(400)
    expect(consul.unsupported()).toEqual(['GET /v1/kv/litefs/app?index=3&wait=5s', 'PUT /v1/catalog/register'])
  })
})
