import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  client,
  configSnapshot,
  expectError,
  expectRejectedUnwritten,
  KINDS,
  MISSING_ID,
  payloadOf,
  q,
  type VersionBody,
} from '../../helpers/config-api.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

/**
 * The lifecycle every configuration kind shares (spec §3.2, §4.3): publish, list active, list
 * versions, get by id, activate by id, withdraw. Budgets here are scope defaults; their per-model
 * rows are covered in config-budgets.test.ts.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

let ctx: TestContext
let org: TestOrg
let api: ReturnType<typeof client>

// One app per file; every test works in an organisation of its own, and everything asserted is per organisation.
beforeAll(async () => {
  ctx = await createTestApp()
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(() => {
  org = ctx.org()
  api = client(ctx, org)
})

describe.each(KINDS)('/api/v1/config/$kind', (spec) => {
  const base = `/api/v1/config/${spec.kind}`
  const list = (namespace?: string) => api.get<VersionBody[]>(`${base}${q({ namespace })}`)
  const versions = (namespace?: string) => api.get<VersionBody[]>(`${base}/versions${q({ namespace })}`)
  const byId = (id: string) => api.get<VersionBody>(`${base}/${id}`)
  const activate = (id: string) => api.post<VersionBody>(`${base}/${id}/activate`)
  const withdraw = (namespace?: string) => api.del<{ was_active: boolean }>(`${base}/active${q({ namespace })}`)

  it('publishes a first version: version 1, active, with its scope and a fresh id', async () => {
    const body = spec.body(1, 'acme/support')
    const v = await api.publish(spec, body)
    expect(v.id).toMatch(UUID)
    expect(v.version).toBe(1)
    expect(v.is_active).toBe(true)
    expect(v.namespace).toBe('acme/support')
    expect(Number.isNaN(Date.parse(v.created_at))).toBe(false)
    expect(Number.isInteger(v.estimated_tokens)).toBe(true)
    expect(v.estimated_tokens).toBeGreaterThanOrEqual(0)
    if (spec.kind === 'instructions' || spec.kind === 'tools') expect(v.mode).toBe('append')
    else expect(v.mode ?? null).toBeNull()
    if (spec.listsPayload) expect(v[spec.payloadField]).toEqual(payloadOf(spec, body))
    else expect(v).not.toHaveProperty(spec.payloadField)
  })

  it('publishes at the org-global scope when namespace is absent or null', async () => {
    const absent = await api.publish(spec, spec.body(1))
    const explicit = await api.publish(spec, spec.body(2, null))
    expect(absent.namespace ?? null).toBeNull()
    expect(explicit.namespace ?? null).toBeNull()
    expect(explicit.version).toBe(2)
    expect((await list()).map((v) => v.id)).toEqual([explicit.id])
  })

  it('lists the active version of one scope only', async () => {
    expect(await list()).toEqual([])
    expect(await list('acme')).toEqual([])
    const global = await api.publish(spec, spec.body(1))
    const acme = await api.publish(spec, spec.body(2, 'acme'))
    await api.publish(spec, spec.body(3, 'acme/support'))
    const atAcme = await list('acme')
    expect(atAcme).toEqual([acme])
    expect(await list()).toEqual([global])
    expect(atAcme[0]!.is_active).toBe(true)
  })

  it('increments versions per scope; a new publish is the active one and the old stays readable', async () => {
    const v1 = await api.publish(spec, spec.body(1, 'acme'))
    const v2 = await api.publish(spec, spec.body(2, 'acme'))
    const other = await api.publish(spec, spec.body(3, 'acme/support'))
    const global = await api.publish(spec, spec.body(4))
    const v3 = await api.publish(spec, spec.body(5, 'acme'))
    expect([v1.version, v2.version, v3.version]).toEqual([1, 2, 3])
    expect(other.version).toBe(1)
    expect(global.version).toBe(1)

    expect((await list('acme')).map((v) => v.id)).toEqual([v3.id])
    const all = await versions('acme')
    expect(all.map((v) => [v.version, v.is_active])).toEqual([
      [3, true],
      [2, false],
      [1, false],
    ])
    expect(all.map((v) => v.id)).toEqual([v3.id, v2.id, v1.id])

    const old = await byId(v1.id)
    expect(old).toMatchObject({ id: v1.id, version: 1, is_active: false, namespace: 'acme', created_at: v1.created_at })
    expect(old[spec.payloadField]).toEqual(payloadOf(spec, spec.body(1)))
  })

  it('GET by id returns the document of every version', async () => {
    const body = spec.body(7, 'acme')
    const v = await api.publish(spec, body)
    const got = await byId(v.id)
    expect(got).toMatchObject({ id: v.id, version: 1, is_active: true, namespace: 'acme', estimated_tokens: v.estimated_tokens })
    expect(got[spec.payloadField]).toEqual(payloadOf(spec, body))
  })

  it('activating an old version deactivates the newer one, and the newer one can be re-activated', async () => {
    const v1 = await api.publish(spec, spec.body(1, 'acme'))
    const v2 = await api.publish(spec, spec.body(2, 'acme'))
    const sibling = await api.publish(spec, spec.body(3, 'acme/support'))

    const activated = await activate(v1.id)
    expect(activated).toMatchObject({ id: v1.id, version: 1, is_active: true, namespace: 'acme' })
    expect((await list('acme')).map((v) => v.id)).toEqual([v1.id])
    expect((await byId(v2.id)).is_active).toBe(false)
    expect((await versions('acme')).map((v) => [v.version, v.is_active])).toEqual([
      [2, false],
      [1, true],
    ])
    // Activation creates no version and touches no other scope.
    expect((await versions('acme')).length).toBe(2)
    expect((await list('acme/support')).map((v) => v.id)).toEqual([sibling.id])

    expect((await activate(v2.id)).is_active).toBe(true)
    expect((await list('acme')).map((v) => v.id)).toEqual([v2.id])
    expect((await byId(v1.id)).is_active).toBe(false)
  })

  it('activating the active version again keeps it active', async () => {
    const v1 = await api.publish(spec, spec.body(1))
    expect((await activate(v1.id)).is_active).toBe(true)
    expect((await list()).map((v) => v.id)).toEqual([v1.id])
  })

  it('withdraws the active version: was_active true, then false on repeat; versions stay restorable', async () => {
    const v1 = await api.publish(spec, spec.body(1, 'acme'))
    const kept = await api.publish(spec, spec.body(2))
    expect(await withdraw('acme')).toEqual({ was_active: true })
    expect(await list('acme')).toEqual([])
    expect((await byId(v1.id)).is_active).toBe(false)
    expect((await versions('acme')).map((v) => v.id)).toEqual([v1.id])
    // Other scopes untouched.
    expect((await list()).map((v) => v.id)).toEqual([kept.id])

    expect(await withdraw('acme')).toEqual({ was_active: false })

    expect((await activate(v1.id)).is_active).toBe(true)
    expect((await list('acme')).map((v) => v.id)).toEqual([v1.id])
  })

  it('withdrawing where nothing was ever published is 200 was_active false and writes nothing', async () => {
    const before = configSnapshot(ctx)
    const res = await api.call('DELETE', `${base}/active${q({ namespace: 'never/used' })}`)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ was_active: false })
    expect(await withdraw()).toEqual({ was_active: false })
    expect(configSnapshot(ctx)).toEqual(before)
  })

  it('a new publish after a withdraw continues the version sequence', async () => {
    await api.publish(spec, spec.body(1, 'acme'))
    await withdraw('acme')
    const next = await api.publish(spec, spec.body(2, 'acme'))
    expect(next.version).toBe(2)
    expect(next.is_active).toBe(true)
  })

  describe('organisations are isolated', () => {
    it('another organisation’s versions are invisible, and version numbers are counted per organisation', async () => {
      const other = client(ctx, ctx.org())
      await other.publish(spec, spec.body(1, 'acme'))
      await other.publish(spec, spec.body(2, 'acme'))
      expect(await list('acme')).toEqual([])
      expect(await versions('acme')).toEqual([])
      expect((await api.publish(spec, spec.body(3, 'acme'))).version).toBe(1)
    })

    it('GET and activate of another organisation’s version are 404 with the body of a missing id, and change nothing', async () => {
      const otherOrg = ctx.org()
      const other = client(ctx, otherOrg)
      const theirs1 = await other.publish(spec, spec.body(1, 'acme'))
      const theirs2 = await other.publish(spec, spec.body(2, 'acme'))
      const before = configSnapshot(ctx)

      const normalise = (res: Awaited<ReturnType<typeof api.call>>, id: string) =>
        JSON.parse(res.body.split(id).join('<id>')) as unknown

      for (const [method, suffix] of [
        ['GET', ''],
        ['POST', '/activate'],
      ] as const) {
        const foreign = await api.call(method, `${base}/${theirs1.id}${suffix}`)
        const missing = await api.call(method, `${base}/${MISSING_ID}${suffix}`)
        expectError(foreign, 404, 'not_found')
        expectError(missing, 404, 'not_found')
        expect(normalise(foreign, theirs1.id)).toEqual(normalise(missing, MISSING_ID))
      }

      expect(configSnapshot(ctx)).toEqual(before)
      expect((await other.get<VersionBody[]>(`${base}${q({ namespace: 'acme' })}`)).map((v) => v.id)).toEqual([theirs2.id])
      expect(await list('acme')).toEqual([])
    })

    it('withdraw only affects the caller’s organisation', async () => {
      const other = client(ctx, ctx.org())
      const theirs = await other.publish(spec, spec.body(1))
      expect(await withdraw()).toEqual({ was_active: false })
      expect((await other.get<VersionBody[]>(base)).map((v) => v.id)).toEqual([theirs.id])
    })
  })

  it('a version id of another kind is 404 here', async () => {
    const foreignKind = KINDS.find((k) => k.kind !== spec.kind)!
    const v = await api.publish(foreignKind, foreignKind.body(1))
    expectError(await api.call('GET', `${base}/${v.id}`), 404, 'not_found')
    expectError(await api.call('POST', `${base}/${v.id}/activate`), 404, 'not_found')
  })

  it.each(['not-a-uuid', '123', `${MISSING_ID}x`])('a malformed id %j is 400 invalid_request', async (id) => {
    const before = configSnapshot(ctx)
    expectError(await api.call('GET', `${base}/${id}`), 400, 'invalid_request')
    expectError(await api.call('POST', `${base}/${id}/activate`), 400, 'invalid_request')
    expect(configSnapshot(ctx)).toEqual(before)
  })

  it('accepts a namespace of exactly 255 characters', async () => {
    const longest = `${'a'.repeat(64)}/${'b'.repeat(64)}/${'c'.repeat(64)}/${'d'.repeat(60)}`
    expect(longest).toHaveLength(255)
    const v = await api.publish(spec, spec.body(1, longest))
    expect(v.namespace).toBe(longest)
    expect((await list(longest)).map((x) => x.id)).toEqual([v.id])
  })

  describe('bad namespaces are 422 and write nothing', () => {
    const BAD = ['', 'Acme', 'acme//support', '/acme', 'acme/', 'acme support', 'acme.support', 'x'.repeat(65), `${'a'.repeat(64)}/`.repeat(4) + 'a']

    it.each(BAD)('in the body: %j', async (namespace) => {
      await api.publish(spec, spec.body(1, 'acme'))
      await expectRejectedUnwritten(ctx, () => api.call('POST', base, spec.body(2, namespace)), 'body', '/namespace')
    })

    it.each(BAD.filter((n) => n !== ''))('in the query: %j', async (namespace) => {
      const url = (path: string) => `${path}?namespace=${encodeURIComponent(namespace)}`
      await expectRejectedUnwritten(ctx, () => api.call('GET', url(base)), 'query', '/namespace')
      await expectRejectedUnwritten(ctx, () => api.call('GET', url(`${base}/versions`)), 'query', '/namespace')
      await expectRejectedUnwritten(ctx, () => api.call('DELETE', url(`${base}/active`)), 'query', '/namespace')
    })

    it('a namespace that is not a string', async () => {
      await expectRejectedUnwritten(ctx, () => api.call('POST', base, { ...spec.body(1), namespace: 42 }), 'body', '/namespace')
    })
  })

  it('an unknown top-level body property is 422 and writes nothing', async () => {
    await expectRejectedUnwritten(ctx, () => api.call('POST', base, { ...spec.body(1), surprise: true }), 'body', '/surprise')
    expect(await versions()).toEqual([])
  })

  it('a missing document is 422 and writes nothing', async () => {
    const { [spec.payloadField]: _doc, ...rest } = spec.body(1)
    await expectRejectedUnwritten(ctx, () => api.call('POST', base, rest), 'body', `/${spec.payloadField}`)
  })

  it('malformed JSON is 400 and writes nothing', async () => {
    const before = configSnapshot(ctx)
    const res = await ctx.app.inject({
      method: 'POST',
      url: base,
      headers: { ...org.auth, 'content-type': 'application/json' },
      payload: '{"namespace": ',
    })
    expectError(res, 400, 'invalid_request')
    expect(configSnapshot(ctx)).toEqual(before)
  })

  it('every endpoint needs a valid API key (401) and writes nothing without one', async () => {
    const v = await api.publish(spec, spec.body(1))
    const before = configSnapshot(ctx)
    const endpoints: [string, string, unknown?][] = [
      ['GET', base],
      ['POST', base, spec.body(2)],
      ['DELETE', `${base}/active`],
      ['GET', `${base}/versions`],
      ['GET', `${base}/${v.id}`],
      ['POST', `${base}/${v.id}/activate`],
    ]
    for (const headers of [{}, { authorization: 'Bearer pk_not_a_real_key' }]) {
      for (const [method, url, payload] of endpoints) {
        const res = await ctx.app.inject({ method: method as 'GET', url, headers, ...(payload ? { payload: payload as object } : {}) })
        expectError(res, 401, 'unauthorized')
      }
    }
    expect(configSnapshot(ctx)).toEqual(before)
    expect((await list()).map((x) => x.id)).toEqual([v.id])
  })
})
