/*
 * What one image costs a model, from its dimensions, by its vendor's documented rule (decision 045).
 * Each rule was read on 2026-11-28 through this project's search of stored documentation; where a
 * vendor documents nothing, the estimate takes the largest of the documented rules, so it errs high
 * (an estimate too low lets a context past the window; too high leaves a little history out).
 */

/** The rule an image is counted by: a vendor's, or the conservative one when a vendor documents none. */
export type ImageRule = 'anthropic' | 'openai' | 'google' | 'mistral' | 'largest'

/** The rule for a catalogue provider. The sandbox counts as Anthropic does (the rule this project used for every vendor before). */
export function imageRuleOf(provider: string): ImageRule {
  switch (provider) {
    case 'anthropic':
    case 'sandbox':
      return 'anthropic'
    case 'openai':
      return 'openai'
    case 'google':
      return 'google'
    case 'mistral':
      return 'mistral'
    // xAI documents no count of image tokens (docs.x.ai, image understanding: limits and types only);
    // DeepSeek's API takes no images. Any other provider: nothing read yet.
    default:
      return 'largest'
  }
}

/** Scales (w, h) down, aspect kept, so neither side passes `side`; never up. */
const fitWithin = (w: number, h: number, side: number): [number, number] => {
  const scale = Math.min(1, side / Math.max(w, h))
  return [w * scale, h * scale]
}

/**
 * Anthropic (platform.claude.com/docs/en/build-with-claude/vision, "Evaluate image size"): an image
 * whose long edge passes 1568 px, or of more than about 1,600 tokens, is scaled down first; then
 * tokens = width × height / 750. Their table: 200×200 → ~54, 1000×1000 → ~1334, 1092×1092 → ~1590.
 */
export const ANTHROPIC_MAX_EDGE = 1568
export const ANTHROPIC_MAX_TOKENS = 1600
function anthropicTokens(width: number, height: number): number {
  const [w, h] = fitWithin(width, height, ANTHROPIC_MAX_EDGE)
  return Math.min(ANTHROPIC_MAX_TOKENS, Math.max(1, Math.ceil((w * h) / 750)))
}

/**
 * OpenAI (platform.openai.com/docs/guides/images-vision, "Calculating costs"; the page itself was not
 * in the store, its rules are as openai/openai-python#2851 restates them). GPT-4o, GPT-4.1 and GPT-5
 * at detail high or auto: fit within 2048×2048, then the short side scaled to 768 (not up), then
 * 85 + 170 per 512-px tile (1024×1024 → 765; 2048×4096 → 1105). The mini and nano models
 * (gpt-5-mini among them) count 32-px patches instead, at most 1536. The catalogue knows the
 * provider, not which rule a model follows: the larger of the two.
 */
export function openAiTileTokens(width: number, height: number): number {
  let [w, h] = fitWithin(width, height, 2048)
  const short = Math.min(w, h)
  if (short > 768) [w, h] = [(w * 768) / short, (h * 768) / short]
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512)
}
/** The patch rule: 32-px patches, at most 1536 (the image is scaled down to fit that many). */
export const openAiPatchTokens = (width: number, height: number): number => Math.min(1536, Math.ceil(width / 32) * Math.ceil(height / 32))
const openAiTokens = (width: number, height: number): number => Math.max(openAiTileTokens(width, height), openAiPatchTokens(width, height))

/**
 * Google (ai.google.dev/gemini-api/docs/tokens, images): an image of at most 384 px both ways is
 * 258 tokens; a larger one is cropped and scaled into 768×768 tiles, 258 tokens each. Gemini 3
 * models count by `media_resolution` instead, 1120 tokens an image at the default (high) setting
 * (cloud.google.com Vertex AI image understanding: "Default resolution tokens: 1120"); we send no
 * media_resolution, so the larger of the two.
 */
export const GEMINI_3_IMAGE_TOKENS = 1120
function geminiTokens(width: number, height: number): number {
  const tiles = width <= 384 && height <= 384 ? 258 : Math.ceil(width / 768) * Math.ceil(height / 768) * 258
  return Math.max(tiles, GEMINI_3_IMAGE_TOKENS)
}

/**
 * Mistral (no count on docs.mistral.ai that we found; Pixtral's published configuration, patch_size
 * 16, and Scaleway's Pixtral page: "1 token for each 16x16 pixel", images scaled to fit 1024×1024):
 * a token a 16-px patch, plus one break token a row of patches (1024×1024 → 64 × 65 = 4160).
 */
function mistralTokens(width: number, height: number): number {
  const [w, h] = fitWithin(width, height, 1024)
  const columns = Math.ceil(w / 16)
  const rows = Math.ceil(h / 16)
  return rows * (columns + 1)
}

/** Tokens of one image of these dimensions under `rule`. */
export function imageTokens(width: number, height: number, rule: ImageRule): number {
  switch (rule) {
    case 'anthropic':
      return anthropicTokens(width, height)
    case 'openai':
      return openAiTokens(width, height)
    case 'google':
      return geminiTokens(width, height)
    case 'mistral':
      return mistralTokens(width, height)
    case 'largest':
      return Math.max(anthropicTokens(width, height), openAiTokens(width, height), geminiTokens(width, height), mistralTokens(width, height))
    default: {
      const unknown: never = rule
      throw new Error(`unknown image rule ${String(unknown)}`)
    }
  }
}

/** An image whose dimensions are not known: the most any rule counts for an image the vendor scales down to its limit. */
export function unknownImageTokens(rule: ImageRule): number {
  switch (rule) {
    case 'anthropic':
      return ANTHROPIC_MAX_TOKENS
    case 'openai':
      return imageTokens(2048, 2048, 'openai')
    case 'google':
      // Google's tiles grow with the image and it documents no scaling down: a 3072-px square (16 tiles) stands in.
      return imageTokens(3072, 3072, 'google')
    case 'mistral':
      return imageTokens(1024, 1024, 'mistral')
    case 'largest':
      return Math.max(unknownImageTokens('anthropic'), unknownImageTokens('openai'), unknownImageTokens('google'), unknownImageTokens('mistral'))
    default: {
      const unknown: never = rule
      throw new Error(`unknown image rule ${String(unknown)}`)
    }
  }
}
