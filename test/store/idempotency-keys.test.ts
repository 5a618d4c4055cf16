import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/index.ts'
import { IDEMPOTENCY_TTL_MS } from '../../src/store/idempotency-keys.ts'
import { openTempStore } from '../helpers/temp-store.ts'

/**
 * docs/guide/runs.md Idempotency, where admission reads it (src/actors/read-submission-facts.ts
 * passes `runOf` to the rules as `keyUsedBy`): the lower layer of test/actors/admission.test.ts
 * "is organisation-scoped and spans chats" and "is honoured for 24 hours, then may be used again".
 */

const HOUR = 3600 * 1000
const T0 = new Date('2030-06-01T12:00:00.000Z')
const at = (ms: number) => new Date(T0.getTime() + ms)

let temp: ReturnType<typeof openTempStore>
let store: Store
beforeAll(() => {
  temp = openTempStore()
  store = temp.store
})
afterAll(() => temp.close())

describe('idempotency keys', () => {
  it('name the first run that used them; the key is the organisation’s, whatever the chat', () => {
    store.idempotencyKeys.record('org-a', 'shared', 'run-1', T0)
    expect(store.idempotencyKeys.runOf('org-a', 'shared', at(1))).toBe('run-1')
    // Another organisation's key of the same text is its own.
    expect(store.idempotencyKeys.runOf('org-b', 'shared', at(1))).toBeNull()
    store.idempotencyKeys.record('org-b', 'shared', 'run-2', T0)
    expect(store.idempotencyKeys.runOf('org-b', 'shared', at(1))).toBe('run-2')
    expect(store.idempotencyKeys.runOf('org-a', 'shared', at(1))).toBe('run-1')
  })

  it('are honoured for 24 hours (at 23 h yes), then may be used again (past 24 h: none, and a new use replaces the old)', () => {
    expect(IDEMPOTENCY_TTL_MS).toBe(24 * HOUR)
    store.idempotencyKeys.record('org-c', 'daily', 'run-1', T0)
    expect(store.idempotencyKeys.runOf('org-c', 'daily', at(23 * HOUR))).toBe('run-1')
    expect(store.idempotencyKeys.runOf('org-c', 'daily', at(24 * HOUR + 60_000))).toBeNull()
    store.idempotencyKeys.record('org-c', 'daily', 'run-2', at(24 * HOUR + 60_000))
    expect(store.idempotencyKeys.runOf('org-c', 'daily', at(24 * HOUR + 120_000))).toBe('run-2')
  })
})
