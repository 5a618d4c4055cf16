import createClient, { type Client } from 'openapi-fetch'
import type { paths } from './schema.ts'
import { DEFAULT_RESEND, turnsOf, type ResendPolicy } from './turns.ts'

export type ParleyClientOptions = {
  /** The server's address, such as `http://127.0.0.1:8080`. */
  baseUrl: string
  /** An API key (`pk_…`), sent as `Authorization: Bearer`. */
  apiKey: string
  /** A fetch of your own (tests, proxies, instrumentation); defaults to the global one. */
  fetch?: (request: Request) => Promise<Response>
  resend?: Partial<ResendPolicy>
}

export type ParleyClient = {
  /** Every operation of /openapi.json, typed from src/schema.ts: openapi-fetch's client, the key set. */
  api: Client<paths>
  /** Streamed turns and retries. */
  turns: ReturnType<typeof turnsOf>
}

export function createParleyClient(options: ParleyClientOptions): ParleyClient {
  // Checked here, so a malformed address fails at once rather than as a failed connection sent again.
  const baseUrl = new URL(options.baseUrl).href.replace(/\/+$/, '')
  const api = createClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  })
  return { api, turns: turnsOf(api, { ...DEFAULT_RESEND, ...options.resend }) }
}
