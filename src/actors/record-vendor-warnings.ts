import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { RunDeps } from './run-deps.ts'

/**
 * Adds the vendor package's own warnings (decision 017) to the running run's manifest, after the
 * translation warnings admission recorded, so run inspection shows every warning the stream sent.
 * Group-committed like every other write; a run that already ended is left as it is.
 */
export function recordVendorWarnings(deps: RunDeps, runId: string, warnings: readonly TranslationWarning[]): Promise<void> {
  return deps.store.writes.write(() => {
    const row = deps.store.runs.getById(runId)
    if (!row || row.status !== 'running') return
    const manifest = JSON.parse(row.manifest) as { warnings?: { config?: unknown[]; translation?: unknown[] } }
    const recorded = manifest.warnings ?? {}
    deps.store.runs.setManifest(runId, { ...manifest, warnings: { ...recorded, translation: [...(recorded.translation ?? []), ...warnings] } })
  })
}
