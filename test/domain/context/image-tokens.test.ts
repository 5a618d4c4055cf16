import { describe, expect, it } from 'vitest'
import { estimateMediaTokens } from '../../../src/domain/context/estimate-part-tokens.ts'
import { imageRuleOf, imageTokens, openAiPatchTokens, openAiTileTokens, unknownImageTokens } from '../../../src/domain/context/image-tokens.ts'

/** Each vendor's documented examples (sources and dates in src/domain/context/image-tokens.ts and decision 045). */
describe('image tokens by the vendor of the model', () => {
  it("Anthropic: width × height / 750, long edge scaled to 1568, about 1,600 at most (their table)", () => {
    expect(imageTokens(200, 200, 'anthropic')).toBe(54)
    expect(imageTokens(1000, 1000, 'anthropic')).toBe(1334)
    expect(imageTokens(1092, 1092, 'anthropic')).toBe(1590)
    // 4000×3000 is scaled to 1568×1176 first: 2459 by area, held at the ~1,600 the vendor scales to.
    expect(imageTokens(4000, 3000, 'anthropic')).toBe(1600)
  })

  it('OpenAI: 85 + 170 a 512-px tile after fitting 2048 and a 768 short side (their worked examples), or 32-px patches', () => {
    // 1024×1024 → 768×768: 4 tiles. 2048×4096 → 1024×2048 → 768×1536: 6 tiles.
    expect(openAiTileTokens(1024, 1024)).toBe(765)
    expect(openAiTileTokens(2048, 4096)).toBe(1105)
    // A small image is not scaled up: one tile.
    expect(openAiTileTokens(64, 48)).toBe(255)
    // The mini and nano models' rule: 1024×1024 is 32 × 32 patches; at most 1536.
    expect(openAiPatchTokens(1024, 1024)).toBe(1024)
    expect(openAiPatchTokens(4000, 3000)).toBe(1536)
    // The catalogue names the provider, not the rule: the larger.
    expect(imageTokens(1024, 1024, 'openai')).toBe(1024)
    expect(imageTokens(2048, 4096, 'openai')).toBe(1536)
  })

  it('Google: 258 up to 384 px both ways, else 258 a 768-px tile; Gemini 3 counts 1120 at its default resolution', () => {
    expect(imageTokens(384, 384, 'google')).toBe(1120)
    expect(imageTokens(3840, 2160, 'google')).toBe(5 * 3 * 258)
  })

  it('Mistral: a token a 16-px patch plus a break a row, within 1024×1024', () => {
    expect(imageTokens(1024, 1024, 'mistral')).toBe(64 * 65)
    expect(imageTokens(2048, 1024, 'mistral')).toBe(32 * 65)
    expect(imageTokens(64, 48, 'mistral')).toBe(3 * 5)
  })

  it('xAI and DeepSeek document none: the largest of the documented rules', () => {
    expect(imageRuleOf('xai')).toBe('largest')
    expect(imageRuleOf('deepseek')).toBe('largest')
    for (const [w, h] of [[64, 48], [1024, 1024], [4000, 3000]] as const) {
      expect(imageTokens(w, h, 'largest')).toBe(Math.max(...(['anthropic', 'openai', 'google', 'mistral'] as const).map((r) => imageTokens(w, h, r))))
    }
  })

  it('the sandbox counts as Anthropic does (the one rule used before)', () => {
    expect(imageRuleOf('sandbox')).toBe('anthropic')
    expect(estimateMediaTokens({ mime: 'image/png', byteLen: 10, width: 30, height: 25, pageCount: null }, imageRuleOf('sandbox'))).toBe(1)
    expect(estimateMediaTokens({ mime: 'image/heic', byteLen: 10, width: null, height: null, pageCount: null }, 'anthropic')).toBe(unknownImageTokens('anthropic'))
  })
})
