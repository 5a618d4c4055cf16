import { randomUUID } from 'node:crypto'
import type { ConfigMode } from '../domain/config/config-types.ts'
import { wallClock, type Clock, type Db } from './database.ts'

export const CONFIG_KINDS = ['instructions', 'tools', 'retention', 'budget'] as const
export type ConfigKind = (typeof CONFIG_KINDS)[number]

/** A stored version as the rest of the code sees it: null scope is org-global, null model untagged. */
export type ConfigVersion = {
  id: string
  kind: ConfigKind
  namespace: string | null
  model_id: string | null
  version: number
  mode: ConfigMode | null
  document: unknown
  estimated_tokens: number
  created_at: string
  is_active: boolean
}

type Row = Omit<ConfigVersion, 'namespace' | 'model_id' | 'document' | 'is_active'> & {
  scope: string
  model_id: string
  document: string
  is_active: number
}

export type NewConfigVersion = {
  orgId: string
  kind: ConfigKind
  namespace: string | null
  modelId?: string | null
  mode: ConfigMode | null
  document: unknown
  /** `JSON.stringify(document)` when the caller made it already (off the event loop: a 2,000-tool bundle, decision 061). */
  documentJson?: string
  estimatedTokens: number
}

const scopeKey = (namespace: string | null) => namespace ?? ''
const modelKey = (modelId: string | null | undefined) => modelId ?? ''

function toVersion(row: Row): ConfigVersion {
  return withDocument(row, JSON.parse(row.document))
}

/** A row with its document given: the caller that wrote it has it, and need not parse 1 MB back (2,000 tools). */
function withDocument(row: Row, document: unknown): ConfigVersion {
  return {
    id: row.id,
    kind: row.kind,
    namespace: row.scope === '' ? null : row.scope,
    model_id: row.model_id === '' ? null : row.model_id,
    version: row.version,
    mode: row.mode,
    document,
    estimated_tokens: row.estimated_tokens,
    created_at: row.created_at,
    is_active: row.is_active === 1,
  }
}

const SELECT = `SELECT v.*, (a.version_id IS NOT NULL) AS is_active FROM config_versions v
  LEFT JOIN config_active a ON a.org_id = v.org_id AND a.kind = v.kind AND a.scope = v.scope
    AND a.model_id = v.model_id AND a.version_id = v.id`

export function createConfigVersionStore(db: Db, clock: Clock = wallClock) {
  const nextVersion = db.prepare<[string, string, string, string], { next: number }>(
    `SELECT coalesce(max(version), 0) + 1 AS next FROM config_versions
     WHERE org_id = ? AND kind = ? AND scope = ? AND model_id = ?`,
  )
  const insert = db.prepare(
    `INSERT INTO config_versions (id, org_id, kind, scope, model_id, version, mode, document, estimated_tokens, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const setActive = db.prepare<[string, string, string, string, string]>(
    `INSERT INTO config_active (org_id, kind, scope, model_id, version_id) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (org_id, kind, scope, model_id) DO UPDATE SET version_id = excluded.version_id`,
  )
  const byId = db.prepare<[string, string, string], Row>(`${SELECT} WHERE v.id = ? AND v.org_id = ? AND v.kind = ?`)
  const activeAt = db.prepare<[string, string, string], Row>(
    `${SELECT} WHERE v.org_id = ? AND v.kind = ? AND v.scope = ? AND a.version_id IS NOT NULL ORDER BY v.model_id`,
  )
  const versionsAt = db.prepare<[string, string, string, string], Row>(
    `${SELECT} WHERE v.org_id = ? AND v.kind = ? AND v.scope = ? AND v.model_id = ? ORDER BY v.version DESC`,
  )
  const activeInScopes = db.prepare<[string, string, string], Row>(
    `${SELECT} WHERE v.org_id = ? AND v.kind = ? AND a.version_id IS NOT NULL
       AND v.scope IN (SELECT value FROM json_each(?))`,
  )
  const withdraw = db.prepare<[string, string, string, string]>(
    'DELETE FROM config_active WHERE org_id = ? AND kind = ? AND scope = ? AND model_id = ?',
  )
  const namespaces = db.prepare<[string], { scope: string }>(
    `SELECT DISTINCT scope FROM config_versions WHERE org_id = ? AND scope <> ''`,
  )

  const publishOne = (v: NewConfigVersion): ConfigVersion => {
    const scope = scopeKey(v.namespace)
    const model = modelKey(v.modelId)
    const id = randomUUID()
    const version = nextVersion.get(v.orgId, v.kind, scope, model)!.next
    insert.run(id, v.orgId, v.kind, scope, model, version, v.mode, v.documentJson ?? JSON.stringify(v.document), v.estimatedTokens, clock().toISOString())
    setActive.run(v.orgId, v.kind, scope, model, id)
    // Written from documentJson, the document is the value it was made of: not parsed back.
    const row = byId.get(id, v.orgId, v.kind)!
    return v.documentJson === undefined ? toVersion(row) : withDocument(row, v.document)
  }
  // What resolution caches is good while this stays the same: this connection's config writes, and
  // data_version, which moves whenever another connection (the admin CLI, LiteFS replication) commits.
  let localWrites = 0
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
  const wrote = <T>(result: T): T => {
    localWrites++
    return result
  }

  const publishAll = db.transaction((versions: NewConfigVersion[]) => versions.map(publishOne))
  const activate = db.transaction((orgId: string, kind: ConfigKind, id: string) => {
    const row = byId.get(id, orgId, kind)
    if (!row) return undefined
    setActive.run(orgId, kind, row.scope, row.model_id, row.id)
    return toVersion(byId.get(id, orgId, kind)!)
  })

  return {
    /** Each document becomes a new active version of its (scope, model), all in one transaction. */
    publish: (versions: NewConfigVersion[]) => wrote(publishAll.immediate(versions)),
    get: (orgId: string, kind: ConfigKind, id: string) => {
      const row = byId.get(id, orgId, kind)
      return row && toVersion(row)
    },
    activate: (orgId: string, kind: ConfigKind, id: string) => wrote(activate.immediate(orgId, kind, id)),
    activeAt: (orgId: string, kind: ConfigKind, namespace: string | null) =>
      activeAt.all(orgId, kind, scopeKey(namespace)).map(toVersion),
    versions: (orgId: string, kind: ConfigKind, namespace: string | null, modelId: string | null = null) =>
      versionsAt.all(orgId, kind, scopeKey(namespace), modelKey(modelId)).map(toVersion),
    /** Active versions at any of the given scopes (null is org-global), for resolution. */
    activeInScopes: (orgId: string, kind: ConfigKind, namespaces: (string | null)[]) =>
      activeInScopes.all(orgId, kind, JSON.stringify(namespaces.map(scopeKey))).map(toVersion),
    withdraw: (orgId: string, kind: ConfigKind, namespace: string | null, modelId: string | null = null) =>
      wrote(withdraw.run(orgId, kind, scopeKey(namespace), modelKey(modelId)).changes > 0),
    /** Changes whenever any active configuration may have changed, here or through another connection. */
    generation: () => `${localWrites}:${dataVersion.get()}`,
    namespaces: (orgId: string) => namespaces.all(orgId).map((r) => r.scope),
  }
}
