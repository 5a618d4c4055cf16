import { correctionOf, NO_SAMPLES, withSample, type CorrectionSamples } from '../domain/context/token-correction.ts'
import type { Clock, Db } from './database.ts'
import type { ReadMostly } from './read-mostly.ts'

/** A model's correction in force, with the runs it was learned from. */
export type TokenCorrection = { correction: number; runs: number }

/** The per-model corrections of the token estimate (src/domain/context/token-correction.ts). */
export function createTokenCorrectionStore(db: Db, now: Clock, readMostly?: ReadMostly) {
  const select = db.prepare<[string], { ratios: string; runs: number }>('SELECT ratios, runs FROM token_corrections WHERE model_id = ?')
  const upsert = db.prepare<[string, string, number, string]>(
    `INSERT INTO token_corrections (model_id, ratios, runs, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (model_id) DO UPDATE SET ratios = excluded.ratios, runs = excluded.runs, updated_at = excluded.updated_at`,
  )
  const samplesOf = (modelId: string): CorrectionSamples => {
    const row = select.get(modelId)
    return row ? { ratios: JSON.parse(row.ratios) as number[], runs: row.runs } : NO_SAMPLES
  }
  const correctionOfModel = (modelId: string): TokenCorrection => {
    const samples = samplesOf(modelId)
    return { correction: correctionOf(samples), runs: samples.runs }
  }
  // Read on every turn, written on every settlement of the model: kept until the next one (src/store/read-mostly.ts).
  const kept = readMostly?.lookup(correctionOfModel)
  return {
    /** The correction a turn on the model packs with now. */
    correctionFor: (modelId: string): TokenCorrection => (kept ? kept.get(modelId) : correctionOfModel(modelId)),
    /** One settled run's ratio, in the caller's transaction (the settlement's). */
    record(modelId: string, ratio: number): void {
      const next = withSample(samplesOf(modelId), ratio)
      upsert.run(modelId, JSON.stringify(next.ratios), next.runs, now().toISOString())
      kept?.forget()
    },
  }
}
