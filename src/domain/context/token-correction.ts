/**
 * The per-model correction of our token estimate (docs/decisions/027-model-limits.md). Budgets keep
 * the one documented estimator (docs/guide/context.md); each vendor counts the same text its own way
 * (Claude, Gemini and Mistral differ from o200k), and reports its count with every run. A model's
 * correction is the ratio of that count to our estimate, learned from its settled runs:
 *
 * - bounded: each ratio is clamped to [0.5, 2], and only the last 16 are kept;
 * - conservative: the correction is the highest recent ratio, rounded up to a step of 0.025 (so
 *   packing does not move turn after turn for noise), and never below 1 until 8 runs were seen;
 * - only runs with at least 1,024 estimated input tokens teach it: in a short prompt the vendor's
 *   fixed framing (roles, tool preambles) outweighs the text, and would overstate the ratio.
 */

export const CORRECTION = {
  minSampleTokens: 1_024,
  runsBeforeLowering: 8,
  kept: 16,
  least: 0.5,
  most: 2,
  step: 0.025,
} as const

/** What is stored per model: the recent ratios (oldest first) and how many runs taught it. */
export type CorrectionSamples = { ratios: number[]; runs: number }

export const NO_SAMPLES: CorrectionSamples = { ratios: [], runs: 0 }

/** The ratio a settled run teaches: the vendor's input count over our estimate; null when it teaches nothing. */
export function sampleRatio(estimatedInputTokens: number, reportedInputTokens: number): number | null {
  if (estimatedInputTokens < CORRECTION.minSampleTokens || reportedInputTokens <= 0) return null
  return Math.min(CORRECTION.most, Math.max(CORRECTION.least, reportedInputTokens / estimatedInputTokens))
}

/** The samples with one more ratio: the oldest let go past the bound. */
export function withSample(samples: CorrectionSamples, ratio: number): CorrectionSamples {
  return { ratios: [...samples.ratios, ratio].slice(-CORRECTION.kept), runs: samples.runs + 1 }
}

/** The correction in force: 1 with no samples; otherwise the highest recent ratio, stepped up, not below 1 until enough runs. */
export function correctionOf(samples: CorrectionSamples): number {
  if (samples.ratios.length === 0) return 1
  const highest = Math.max(...samples.ratios)
  const conservative = samples.runs < CORRECTION.runsBeforeLowering ? Math.max(1, highest) : highest
  // Whole steps, counted in thousandths so 1.25 stays 1.25 and not 1.2500000000000002.
  const steps = Math.ceil(Math.round(conservative * 1_000_000) / (CORRECTION.step * 1_000_000))
  return Math.round(steps * CORRECTION.step * 1_000) / 1_000
}
