import { AsyncLocalStorage } from 'node:async_hooks'

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

const current = new AsyncLocalStorage<VendorCallRecord>()

export const newVendorCallRecord = (): VendorCallRecord => ({ requests: 0, retryWaitMs: 0 })

/** Runs `call` so that the vendor fetch it makes fills in `record` (also when the call throws). */
export const withVendorCallRecord = <T>(record: VendorCallRecord, call: () => T): T => current.run(record, call)

/** The record of the call in progress, if any (the sandbox and tests call models without one). */
export const currentVendorCall = (): VendorCallRecord | undefined => current.getStore()
