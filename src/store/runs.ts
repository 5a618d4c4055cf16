import type { Usage } from '../domain/pricing/usage.ts'
import type { RunLease } from '../domain/runs/lease.ts'
import type { Db } from './database.ts'

export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'cancelled'] as const
export type RunStatus = (typeof RUN_STATUSES)[number]
export type RunOrigin = 'customer' | 'compaction'

export type RunRow = {
  id: string
  org_id: string
  chat_id: string
  origin: RunOrigin
  status: RunStatus
  model_id: string
  model_name: string
  namespace: string | null
  api_key_id: string | null
  retry_of: string | null
  created_at: string
  completed_at: string | null
  settled_at: string | null
  cost_units: bigint | null
  error: string | null
  stop_reason: string | null
  latency_ms: number | null
  provider_request_id: string | null
  usage: string | null
  manifest: string
  lease_owner: string | null
  lease_expires_at: string | null
}

export type NewRun = Pick<
  RunRow,
  'id' | 'org_id' | 'chat_id' | 'origin' | 'model_id' | 'model_name' | 'namespace' | 'api_key_id' | 'retry_of' | 'created_at'
> & { manifest: unknown; lease_owner: string; lease_expires_at: string }

/** A run as a list of an organisation's runs shows it: no manifest, usage or lease. */
export type RunSummary = Pick<
  RunRow,
  'id' | 'chat_id' | 'origin' | 'status' | 'model_name' | 'namespace' | 'api_key_id' | 'created_at' | 'completed_at' | 'cost_units' | 'error'
>

/** The columns a run's finish writes (settleInLedger, src/actors/run-lifecycle.ts, makes them from the domain's RunOutcome). */
export type RunFinish = {
  status: Exclude<RunStatus, 'running'>
  completedAt: string
  error: string | null
  stopReason: string | null
  latencyMs: number | null
  providerRequestId: string | null
  usage: Usage | null
}

/** test/http/running-run-caps.test.ts checks its plan uses migration 0012's index. */
export const RUNNING_CUSTOMER_RUNS_OF_ORG_SQL = `SELECT count(*) AS n FROM runs WHERE org_id = ? AND status = 'running' AND origin = 'customer'`

export function createRunStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO runs (id, org_id, chat_id, origin, status, model_id, model_name, namespace, api_key_id, retry_of,
       created_at, manifest, lease_owner, lease_expires_at)
     VALUES (@id, @org_id, @chat_id, @origin, 'running', @model_id, @model_name, @namespace, @api_key_id, @retry_of,
       @created_at, @manifest, @lease_owner, @lease_expires_at)`,
  )
  const byId = db.prepare<[string], RunRow>('SELECT * FROM runs WHERE id = ?').safeIntegers(true)
  const byOrg = db.prepare<[string, string], RunRow>('SELECT * FROM runs WHERE id = ? AND org_id = ?').safeIntegers(true)
  const statusById = db.prepare<[string], { status: RunStatus }>('SELECT status FROM runs WHERE id = ?')
  const latestCustomer = db
    .prepare<[string], RunRow>(
      `SELECT * FROM runs WHERE chat_id = ? AND origin = 'customer' ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    )
    .safeIntegers(true)
  const running = db
    .prepare<[string], RunRow>(`SELECT * FROM runs WHERE chat_id = ? AND status = 'running' LIMIT 1`)
    .safeIntegers(true)
  // At most one (migration 0009's partial unique index, which also serves this lookup).
  const runningCustomer = db.prepare<[string], { id: string; lease_owner: string | null; lease_expires_at: string | null }>(
    `SELECT id, lease_owner, lease_expires_at FROM runs WHERE chat_id = ? AND status = 'running' AND origin = 'customer' LIMIT 1`,
  )
  // Settling ends the run and records its cost in one statement; a run ended already is left alone.
  const finish = db.prepare(
    `UPDATE runs SET status = @status, completed_at = @completedAt, error = @error, stop_reason = @stopReason,
       latency_ms = @latencyMs, provider_request_id = @providerRequestId, usage = @usage,
       lease_owner = NULL, lease_expires_at = NULL, cost_units = @costUnits, settled_at = @settledAt
     WHERE id = @id AND status = 'running'`,
  )
  // Runs named in the JSON array are left out: runs this node gave up (decision 020).
  const renew = db.prepare<[string, string, string]>(
    `UPDATE runs SET lease_expires_at = ? WHERE lease_owner = ? AND status = 'running'
       AND id NOT IN (SELECT value FROM json_each(?))`,
  )
  // Nobody streams the run any more: its lease ends now and has no owner to renew it.
  const release = db.prepare<[string, string]>(
    `UPDATE runs SET lease_owner = NULL, lease_expires_at = ? WHERE id = ? AND status = 'running'`,
  )
  // Expired at the instant of expiry, as leaseIsLive says.
  const abandoned = db
    .prepare<[string, string], RunRow>(
      `SELECT * FROM runs WHERE status = 'running' AND (lease_expires_at <= ? OR lease_owner = ?)`,
    )
    .safeIntegers(true)
  const everyRunning = db.prepare<[], RunRow>(`SELECT * FROM runs WHERE status = 'running'`).safeIntegers(true)
  // Through runs_unstored_chat (migration 0017): the chats of responses not to be stored with no run running.
  const unstoredChats = db.prepare<[], { chat_id: string; org_id: string }>(
    `SELECT DISTINCT r.chat_id, c.org_id FROM runs r JOIN chats c ON c.id = r.chat_id
     WHERE json_extract(r.manifest, '$.openai_request.store') = 0
       AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.chat_id = r.chat_id AND x.status = 'running')`,
  )
  const nextForeignExpiry = db.prepare<[string, string], { next: string | null }>(
    `SELECT MIN(lease_expires_at) AS next FROM runs WHERE status = 'running' AND (lease_owner IS NULL OR lease_owner <> ?)
       AND lease_expires_at > ?`,
  )
  const setManifest = db.prepare<[string, string]>(`UPDATE runs SET manifest = ? WHERE id = ? AND status = 'running'`)
  // A fork's failed runs include those it inherited with its copied parts (migration 0014).
  const failedOfChat = db.prepare<[string, string], { id: string }>(
    `SELECT id FROM runs WHERE chat_id = ? AND status = 'failed'
     UNION ALL SELECT run_id AS id FROM inherited_runs WHERE chat_id = ? AND status = 'failed'`,
  )
  // Migration 0012's partial index holds exactly these rows, and no more of them than the cap ever let
  // run (admission refuses past it), so the count needs no LIMIT of its own: with one (a bound
  // `LIMIT ?` in a subquery) the same count took 70-100 µs against 16 µs plain, twice per turn (issue 34).
  const runningCustomerOfOrg = db.prepare<[string], { n: number }>(RUNNING_CUSTOMER_RUNS_OF_ORG_SQL)

  // Newest first through migration 0013's index; rowid orders runs created in the same millisecond.
  const recentOfOrg = db
    .prepare<{ org: string; status: RunStatus | null; limit: number }, RunSummary>(
      `SELECT id, chat_id, origin, status, model_name, namespace, api_key_id, created_at, completed_at, cost_units, error
       FROM runs WHERE org_id = @org AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
    )
    .safeIntegers(true)

  return {
    insert: (run: NewRun) => insert.run({ ...run, manifest: JSON.stringify(run.manifest) }),
    get: (orgId: string, id: string) => byOrg.get(id, orgId),
    getById: (id: string) => byId.get(id),
    /** The run's status alone (not its manifest, which can be kilobytes), once per settled run. */
    statusOf: (id: string): RunStatus | undefined => statusById.get(id)?.status,
    latestCustomerRun: (chatId: string) => latestCustomer.get(chatId),
    runningRun: (chatId: string) => running.get(chatId),
    /** The chat's running customer run, whoever streams it, with its lease; compaction runs run beside it. */
    runningCustomerRun: (chatId: string): RunLease | null => {
      const row = runningCustomer.get(chatId)
      return row ? { id: row.id, leaseOwner: row.lease_owner, leaseExpiresAt: row.lease_expires_at } : null
    },
    /**
     * Marks a running run finished and, with its cost, settled; false when it had already finished
     * (the first outcome stands, and nothing may be charged again).
     */
    finish: (id: string, o: RunFinish, settlement: { costUnits: bigint; settledAt: string } | null = null) =>
      finish.run({
        id,
        ...o,
        usage: o.usage === null ? null : JSON.stringify(o.usage),
        costUnits: settlement?.costUnits ?? null,
        settledAt: settlement?.settledAt ?? null,
      }).changes > 0,
    /** A running run's manifest once its context is final (after compaction, docs/guide/context.md). */
    setManifest: (id: string, manifest: unknown) => setManifest.run(JSON.stringify(manifest), id).changes > 0,
    /** Renews the leases of `owner`'s running runs, except the runs named in `except`. */
    renewLeases: (owner: string, expiresAt: string, except: readonly string[] = []) => renew.run(expiresAt, owner, JSON.stringify(except)).changes,
    /**
     * decision 020: a run whose settlement failed is left to the sweep: its lease expires at `at`
     * (now) and, with no owner, is never renewed. False when the run is no longer running.
     */
    releaseLease: (id: string, at: string) => release.run(at, id).changes > 0,
    /** Running runs nobody can be streaming: an expired lease, or a lease of this node's previous life. */
    abandoned: (now: string, previousSelf: string) => abandoned.all(now, previousSelf),
    /** Every running run, whoever holds its lease: what a newly promoted LiteFS primary takes over. */
    everyRunning: () => everyRunning.all(),
    /** Chats kept for responses not to be stored that nothing runs in (decision 055): left by a node that stopped. */
    unstoredChats: () => unstoredChats.all(),
    /**
     * When the next lease held by another node (or by nobody) expires after `after`, if one does.
     * Leases already expired are not waited for: a sweep just saw them (decision 020).
     */
    nextForeignLeaseExpiry: (self: string, after = '') => nextForeignExpiry.get(self, after)?.next ?? null,
    failedRunIds: (chatId: string) => failedOfChat.all(chatId, chatId).map((r) => r.id),
    /**
     * The organisation's running customer runs, across its chats, counted up to `upTo` (the cap of
     * docs/decisions/033-running-run-caps.md): compaction runs do not count.
     */
    runningCustomerRunsOfOrg: (orgId: string, upTo: number) => Math.min(upTo, runningCustomerOfOrg.get(orgId)!.n),
    /** The organisation's newest runs, of one status or of any, at most `limit` (the admin `runs` command). */
    recentOfOrg: (orgId: string, options: { status: RunStatus | null; limit: number }) =>
      recentOfOrg.all({ org: orgId, status: options.status, limit: options.limit }),
  }
}
