import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { TestContext, TestOrg } from './test-app.ts'

/** Helpers for the configuration routes' tests (spec §4.3). */

export const MODEL_A = '0b6f1a9e-7c1d-4f43-9a58-2b1d3c4e5f60'
export const MODEL_B = '7d9b3c2a-1e4f-4a6b-8c0d-9e8f7a6b5c4d'
export const MISSING_ID = '3f2c1b0a-9d8e-4f7a-b6c5-d4e3f2a1b0c9'

export type Problem = { in: string; pointer: string; message: string }
export type VersionBody = {
  id: string
  version: number
  estimated_tokens: number
  is_active: boolean
  created_at: string
  mode?: string | null
  namespace?: string | null
  model_id?: string | null
  [payload: string]: unknown
}

export type KindSpec = {
  kind: 'instructions' | 'tools' | 'retention' | 'budgets'
  /** Field holding the document in GET by id. */
  payloadField: 'body' | 'definitions' | 'rules' | 'budget'
  /** Whether list/publish/activate answers carry the document too (RetentionPolicyResponse, ContextBudgetResponse). */
  listsPayload: boolean
  /** A valid publish body; `n` makes each document distinguishable. */
  body: (n: number, namespace?: string | null) => Record<string, unknown>
}

const withNamespace = (body: Record<string, unknown>, namespace: string | null | undefined) =>
  namespace === undefined ? body : { ...body, namespace }

export const KINDS: KindSpec[] = [
  {
    kind: 'instructions',
    payloadField: 'body',
    listsPayload: false,
    body: (n, namespace) => withNamespace({ body: `You are assistant number ${n}.`, mode: 'append' }, namespace),
  },
  {
    kind: 'tools',
    payloadField: 'definitions',
    listsPayload: false,
    body: (n, namespace) =>
      withNamespace(
        {
          mode: 'append',
          definitions: [
            { name: `tool_${n}`, description: `tool ${n}`, input_schema: { type: 'object', properties: { q: { type: 'string' } } } },
          ],
        },
        namespace,
      ),
  },
  {
    kind: 'retention',
    payloadField: 'rules',
    listsPayload: true,
    body: (n, namespace) => withNamespace({ rules: { version: 1, anchor_parts: n } }, namespace),
  },
  {
    kind: 'budgets',
    payloadField: 'budget',
    listsPayload: true,
    body: (n, namespace) => withNamespace({ budget: { version: 3, headroom: 0.1, max_history_tokens: 32_000 + n } }, namespace),
  },
]

export const payloadOf = (spec: KindSpec, body: Record<string, unknown>) => body[spec.payloadField]

/** Requests on behalf of one organisation. */
export function client(ctx: TestContext, org: TestOrg) {
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: org.auth, ...(payload === undefined ? {} : { payload: payload as object }) })
  const ok = async <T>(res: Promise<LightMyRequestResponse>): Promise<T> => {
    const r = await res
    expect(r.statusCode, r.body).toBe(200)
    return r.json() as T
  }
  return {
    call,
    get: <T = unknown>(url: string) => ok<T>(call('GET', url)),
    post: <T = unknown>(url: string, payload?: unknown) => ok<T>(call('POST', url, payload ?? {})),
    del: <T = unknown>(url: string) => ok<T>(call('DELETE', url)),
    /** Publishes one version of a kind and returns it (budgets answer an array; this takes its single row). */
    async publish(spec: KindSpec, body: Record<string, unknown>): Promise<VersionBody> {
      const res = await ok<VersionBody | VersionBody[]>(call('POST', `/api/v1/config/${spec.kind}`, body))
      if (spec.kind === 'budgets') {
        expect(Array.isArray(res)).toBe(true)
        expect(res).toHaveLength(1)
        return (res as VersionBody[])[0]!
      }
      expect(Array.isArray(res)).toBe(false)
      return res as VersionBody
    },
  }
}

export const q = (params: Record<string, string | null | undefined>) => {
  const entries = Object.entries(params).filter((e): e is [string, string] => typeof e[1] === 'string')
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries).toString()}`
}

/** Rows of both configuration tables: a rejected request must change neither. */
export function configSnapshot(ctx: TestContext) {
  const count = (table: string) => (ctx.store.db.prepare(`select count(*) n from ${table}`).get() as { n: number }).n
  const active = ctx.store.db
    .prepare('select org_id, kind, scope, model_id, version_id from config_active order by 1, 2, 3, 4')
    .all()
  return { versions: count('config_versions'), active }
}

export function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const body = res.json() as { error: { code: string; message: string; details?: unknown } }
  expect(Object.keys(body)).toEqual(['error'])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe('string')
  expect(body.error.message.length).toBeGreaterThan(0)
  return body.error
}

const JSON_POINTER = /^(\/([^/~]|~[01])*)*$/

/** 422 validation_failed listing a problem at `pointer` in `where` (decisions §3). */
export function expectProblem(res: LightMyRequestResponse, where: 'body' | 'query' | 'path', pointer: string): Problem[] {
  const error = expectError(res, 422, 'validation_failed')
  const problems = (error.details as { problems: Problem[] }).problems
  expect(Array.isArray(problems)).toBe(true)
  for (const problem of problems) {
    expect(Object.keys(problem).sort()).toEqual(['in', 'message', 'pointer'])
    expect(problem.pointer).toMatch(JSON_POINTER)
    expect(problem.message.length).toBeGreaterThan(0)
  }
  expect(problems, JSON.stringify(problems)).toContainEqual(expect.objectContaining({ in: where, pointer }))
  return problems
}

/**
 * Sends a request that must be refused with 422 at `pointer`, and proves nothing was written:
 * neither config table changed.
 */
export async function expectRejectedUnwritten(
  ctx: TestContext,
  send: () => Promise<LightMyRequestResponse>,
  where: 'body' | 'query',
  pointer: string,
): Promise<Problem[]> {
  const before = configSnapshot(ctx)
  const problems = expectProblem(await send(), where, pointer)
  expect(configSnapshot(ctx)).toEqual(before)
  return problems
}
