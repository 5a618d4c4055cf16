/**
 * Resolves once the event loop has polled for I/O again, so the sockets that became readable meanwhile
 * (a `/healthz` probe, a streaming turn's client) are served before the caller goes on (issue 36).
 * Code running in an I/O callback (a request body's last chunk, the hooks and handler it runs into)
 * that awaits one setImmediate resumes in the same turn of the loop, before any socket is read; an
 * immediate queued from the check phase runs only in the next turn, after its poll.
 */
export const afterNextPoll = (): Promise<void> => new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
