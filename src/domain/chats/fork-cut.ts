/**
 * Where a fork cuts its source's ledger (docs/decisions/037-fork.md). Pure: the chat's actor decides
 * with it on what the ledger held when the FORK event came.
 */

/**
 * What the ledger holds of the source when the fork is asked for: its last ordinal, and the last
 * ordinal before its running run's first part (the running turn's tombstones, input and output so
 * far are written under its run id and are not settled). Both null for an empty ledger;
 * `lastSettledOrdinal` is null too when every part belongs to the running run.
 */
export type ForkLedgerView = { lastOrdinal: number | null; lastSettledOrdinal: number | null }

/**
 * `upTo`: copy the parts with ordinals up to it; null copies nothing (an empty or wholly unsettled
 * source forked whole). A refusal names the problem for `/up_to_ordinal`.
 */
export type ForkCut = { kind: 'cut'; upTo: number | null } | { kind: 'refused'; message: string }

export function decideForkCut(requested: number | null | undefined, ledger: ForkLedgerView): ForkCut {
  if (requested === undefined || requested === null) return { kind: 'cut', upTo: ledger.lastSettledOrdinal }
  if (!Number.isSafeInteger(requested) || requested < 1) return { kind: 'refused', message: 'must be an ordinal of the ledger (at least 1)' }
  if (ledger.lastOrdinal === null) return { kind: 'refused', message: 'is beyond the ledger, which is empty' }
  if (requested > ledger.lastOrdinal) {
    return { kind: 'refused', message: `is beyond the ledger, whose last ordinal is ${ledger.lastOrdinal}` }
  }
  if (ledger.lastSettledOrdinal === null || requested > ledger.lastSettledOrdinal) {
    const settled = ledger.lastSettledOrdinal === null ? 'no part is settled yet' : `the last settled ordinal is ${ledger.lastSettledOrdinal}`
    return { kind: 'refused', message: `points inside the running run, whose parts are not settled (${settled})` }
  }
  return { kind: 'cut', upTo: requested }
}

/** A fork's cut allows it: what the machine's guard asks. */
export const forkCutIsSettled = (requested: number | null | undefined, ledger: ForkLedgerView): boolean =>
  decideForkCut(requested, ledger).kind === 'cut'
