/**
 * How long a vendor call may take, phase by phase (issue 11, decision 015). A failure before the
 * vendor's first byte is an HTTP error for the client, so `firstByteTimeoutMs` bounds how long a
 * client waits without a status line, retries and their waits included.
 */
export type VendorCallLimits = {
  /** VENDOR_CONNECT_TIMEOUT_MS: one TCP (and TLS) connection attempt. */
  connectTimeoutMs: number
  /** VENDOR_FIRST_BYTE_TIMEOUT_MS: from the call to the first byte of the vendor's stream, every attempt and wait included. */
  firstByteTimeoutMs: number
  /** VENDOR_IDLE_TIMEOUT_MS: the longest silence between two chunks once the stream has started. */
  idleTimeoutMs: number
  /** VENDOR_MAX_RETRIES: attempts after the first, only before the first byte. */
  maxRetries: number
  /** VENDOR_RETRY_BASE_MS: the first backoff; each retry doubles it, with jitter. */
  retryBaseMs: number
}

export const DEFAULT_VENDOR_CALL_LIMITS: VendorCallLimits = {
  connectTimeoutMs: 5_000,
  // Well under a minute: a client is never left without a status line for longer.
  firstByteTimeoutMs: 30_000,
  // Reasoning models may think in silence between events; vendors that do send keep-alives.
  idleTimeoutMs: 90_000,
  maxRetries: 2,
  retryBaseMs: 500,
}

const VARIABLES: Record<keyof VendorCallLimits, string> = {
  connectTimeoutMs: 'VENDOR_CONNECT_TIMEOUT_MS',
  firstByteTimeoutMs: 'VENDOR_FIRST_BYTE_TIMEOUT_MS',
  idleTimeoutMs: 'VENDOR_IDLE_TIMEOUT_MS',
  maxRetries: 'VENDOR_MAX_RETRIES',
  retryBaseMs: 'VENDOR_RETRY_BASE_MS',
}

/** Reads the limits from the environment; a bad value stops the process at start with its variable named. */
export function readVendorCallLimits(env: NodeJS.ProcessEnv): VendorCallLimits {
  const limits = { ...DEFAULT_VENDOR_CALL_LIMITS }
  for (const key of Object.keys(VARIABLES) as (keyof VendorCallLimits)[]) {
    const raw = env[VARIABLES[key]]
    if (raw === undefined || raw === '') continue
    const value = Number(raw)
    const least = key === 'maxRetries' || key === 'retryBaseMs' ? 0 : 1
    if (!Number.isInteger(value) || value < least || value > 3_600_000) {
      throw new Error(`${VARIABLES[key]} must be a whole number from ${least} to 3600000, got ${raw}`)
    }
    limits[key] = value
  }
  return limits
}
