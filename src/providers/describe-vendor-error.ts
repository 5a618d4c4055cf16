/**
 * A vendor failure in one line for the run's `error`. The SDK wraps some failures in its own
 * ("Failed to process successful response"), so the cause that says what happened is added.
 */
export function describeVendorError(error: unknown): string {
  const message = messageOf(error)
  const cause = error instanceof Error ? error.cause : undefined
  const because = cause === undefined || cause === null ? null : messageOf(cause)
  return because && because !== message && !message.includes(because) ? `${message}: ${because}` : message
}

const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : // Some providers pass the vendor's own error object through, e.g. Anthropic's `{ type, message }`.
      typeof (error as { message?: unknown } | null)?.message === 'string'
      ? (error as { message: string }).message
      : String(error)
