/*
 * docs/decisions/032-attachment-checks.md: the largest image side each vendor documents that it
 * takes. Where a vendor documents none (it scales images down instead), the platform's ceiling
 * holds: no model reads anywhere near it, and it bounds what a decoder would allocate.
 */

/** Pixels on either side, for a vendor without a documented maximum. */
export const PLATFORM_MAX_IMAGE_SIDE = 16_384

const MAX_IMAGE_SIDE: Readonly<Record<string, number>> = {
  // "If you submit an image larger than 8000x8000 px, it will be rejected" (Claude vision guide).
  anthropic: 8_000,
  // The sandbox stands in for every vendor: it takes the strictest documented limit, so a test or
  // demo against it sees the refusal a real vendor would give.
  sandbox: 8_000,
}

/** The most pixels either side of an image may have for a model of this provider. */
export const maxImageSide = (provider: string): number => MAX_IMAGE_SIDE[provider] ?? PLATFORM_MAX_IMAGE_SIDE
