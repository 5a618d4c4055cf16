/**
 * What one provider call did on the network, filled in by the vendor fetch while the call runs.
 * A call that sent no request failed locally (the vendor library refused the prompt): docs/decisions/015-vendor-calls-deadlines-retries-uptime.md
 * keeps such failures out of uptime.
 */
export type VendorCallRecord = {
  /** HTTP requests sent, retries included. */
  requests: number
  /** Milliseconds spent waiting between attempts (part of the time to first token). */
  retryWaitMs: number
}

/**
 * The record of the call being started, for the synchronous part of `withVendorCallRecord` only.
 * No AsyncLocalStorage (issue 34: nothing context-tracking on the hot path): a model reads the record
 * once, synchronously, as its doStream is entered, and carries it from there itself (the vendor
 * models of ./language-models.ts bind it into the fetch of that one call; the sandbox counts it at
 * once). Anything read after the first await sees no record.
 */
let current: VendorCallRecord | undefined

export const newVendorCallRecord = (): VendorCallRecord => ({ requests: 0, retryWaitMs: 0 })

/**
 * Runs `call` so that the provider call it starts fills in `record` (also when the call throws).
 * `call` must start that provider call synchronously (`() => model.doStream(...)`): the record is
 * handed over during the synchronous part of `call`, not across its awaits.
 */
export const withVendorCallRecord = <T>(record: VendorCallRecord, call: () => T): T => {
  const outer = current
  current = record
  try {
    return call()
  } finally {
    current = outer
  }
}

/** The record of the call being started, if any (the sandbox and tests call models without one); read it synchronously on entry. */
export const currentVendorCall = (): VendorCallRecord | undefined => current
