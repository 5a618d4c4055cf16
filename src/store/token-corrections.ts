import { correctionOf, NO_SAMPLES, withSample, type CorrectionSamples } from '../domain/context/token-correction.ts'
import type { Clock, Db } from './database.ts'

/** A model's correction in force, with the runs it was learned from. */
export type TokenCorrection = { correction: number; runs: number }

/** The per-model corrections of the token estimate (src/domain/context/token-correction.ts). */
export function createTokenCorrectionStore(db: Db, now: Clock) {
  const select = db.prepare<[string], { ratios: string; runs: number }>('SELECT ratios, runs FROM token_corrections WHERE model_id = ?')
  const upsert = db.prepare<[string, string, number, string]>(
    `INSERT INTO token_corrections (model_id, ratios, runs, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (model_id) DO UPDATE SET ratios = excluded.ratios, runs = excluded.runs, updated_at = excluded.updated_at`,
  )
  const samplesOf = (modelId: string): CorrectionSamples => {
    const row = select.get(modelId)
    return row ? { ratios: JSON.parse(row.ratios) as number[], runs: row.runs } : NO_SAMPLES
  }
  return {
    /** The correction a turn on the model packs with now. */
    correctionFor(modelId: string): TokenCorrection {
      const samples = samplesOf(modelId)
      return { correction: correctionOf(samples), runs: samples.runs }
    },
    /** One settled run's ratio, in the caller's transaction (the settlement's). */
    record(modelId: string, ratio: number): void {
      const next = withSample(samplesOf(modelId), ratio)
      upsert.run(modelId, JSON.stringify(next.ratios), next.runs, now().toISOString())
    },
  }
}
