import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { App } from '../../src/http/app.ts'
import type { Store } from '../../src/store/index.ts'

export type Auth = { authorization: string }

export type ChatCreatedBody = {
  id: string
  namespace: string | null
  title: string | null
  description: string | null
  user_metadata: Record<string, unknown>
  created_at: string
}
export type ChatSummaryBody = ChatCreatedBody & { length: number; updated_at: string }
export type ChatPageBody = { data: ChatSummaryBody[]; first_id: string | null; last_id: string | null; has_more: boolean }
export type Problem = { in: string; pointer: string; message: string }

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** A JSON pointer (RFC 6901): empty, or a sequence of `/token`. */
export const JSON_POINTER = /^(\/([^/~]|~[01])*)*$/

export async function createChat(app: App, auth: Auth, body: Record<string, unknown> = {}): Promise<ChatCreatedBody> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/chats', headers: auth, payload: body })
  expect(res.statusCode, res.body).toBe(201)
  return res.json()
}

export async function listChats(app: App, auth: Auth, query = ''): Promise<ChatPageBody> {
  const res = await app.inject({ method: 'GET', url: `/api/v1/chats${query}`, headers: auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** Row counts straight from the database, to prove rejected input wrote nothing. */
export function countRows(store: Store, table: 'chats' | 'parts' | 'organisations' | 'api_keys' | 'balance_entries' | 'platform_updates' | 'console_sessions'): number {
  return (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
}

export function expectError(res: LightMyRequestResponse, status: number, code: string): { code: string; message: string; details?: unknown } {
  expect(res.statusCode, res.body).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const body = res.json()
  expect(Object.keys(body)).toEqual(['error'])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe('string')
  expect(body.error.message.length).toBeGreaterThan(0)
  return body.error
}

/** A 422 validation_failed whose problems are well formed and include one at `pointer` in `where`. */
export function expectProblem(res: LightMyRequestResponse, where: 'body' | 'query' | 'path', pointer: string): Problem[] {
  const error = expectError(res, 422, 'validation_failed')
  const problems = (error.details as { problems: Problem[] }).problems
  expect(Array.isArray(problems)).toBe(true)
  expect(problems.length).toBeGreaterThan(0)
  for (const problem of problems) {
    expect(Object.keys(problem).sort()).toEqual(['in', 'message', 'pointer'])
    expect(['body', 'query', 'path']).toContain(problem.in)
    expect(problem.pointer).toMatch(JSON_POINTER)
    expect(problem.message.length).toBeGreaterThan(0)
  }
  expect(problems).toContainEqual(expect.objectContaining({ in: where, pointer }))
  return problems
}
