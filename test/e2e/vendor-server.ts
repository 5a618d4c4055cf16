import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { startServer, type ServerProcess } from './server-process.ts'
import { request, type HttpAnswer } from './turn-client.ts'
import { FIXTURES, type Vendor } from './vendor-fixtures/index.ts'
import { startReplayServer, type ReplayServer, type ReplayServerOptions } from './vendor-replay-server.ts'

/**
 * The real server process with every vendor's key and a base URL on the loopback vendor replay
 * server, as the vendor end-to-end tests run it, with the dev API key and the small API helpers.
 */

/** The environment variable each vendor's key is read from. */
export const VENDOR_KEY_VARIABLES: Record<Vendor, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
}

/** The fake key each vendor is given (what the replay server sees in the vendor's auth header). */
export const VENDOR_KEYS: Record<Vendor, string> = {
  anthropic: 'sk-ant-api03-replay-anthropic-key',
  openai: 'sk-proj-replay-openai-key',
  google: 'AIzaSyReplay-google-key',
  mistral: 'replay-mistral-key',
  xai: 'xai-replay-key',
  deepseek: 'sk-replay-deepseek-key',
}

/** One catalogue model per vendor, for tests that need one to call. */
export { VENDOR_MODELS } from '../helpers/vendor-cases.ts'

/**
 * The server's environment: `dataDir`, `nodeId`, the sandbox on, vendor retries 20 ms apart, and
 * every vendor's key and `<VENDOR>_BASE_URL` on `replay`; then `extra`.
 */
export function vendorEnv(replay: ReplayServer, dataDir: string, nodeId: string, extra: Record<string, string> = {}): Record<string, string> {
  return { DATA_DIR: dataDir, NODE_ID: nodeId, SANDBOX: 'on', VENDOR_RETRY_BASE_MS: '20', ...vendorsOn(replay), ...extra }
}

/** Every vendor's key and `<VENDOR>_BASE_URL` on `replay`. */
export function vendorsOn(replay: ReplayServer): Record<string, string> {
  const env: Record<string, string> = {}
  for (const vendor of Object.keys(FIXTURES) as Vendor[]) {
    env[VENDOR_KEY_VARIABLES[vendor]] = VENDOR_KEYS[vendor]
    env[`${vendor.toUpperCase()}_BASE_URL`] = replay.baseUrl(vendor)
  }
  return env
}

/** The vendor environment of an app run in process (createLanguageModels): every vendor on `replay`, no retries, so a refusal is seen once. */
export const inProcessVendorEnv = (replay: ReplayServer): NodeJS.ProcessEnv => ({ ...vendorsOn(replay), VENDOR_MAX_RETRIES: '0' })

export type VendorServer = {
  replay: ReplayServer
  server: ServerProcess
  dataDir: string
  /** The dev API key the server wrote to DATA_DIR/dev-api-key.txt. */
  devKey: string
  /** A request to the server with the dev key. */
  api: (path: string, init?: { method?: string; body?: unknown }) => Promise<HttpAnswer>
  /** Creates a chat (201) and gives its id. */
  newChat: () => Promise<string>
  /** The run as GET /api/v1/runs/:id serves it (200). */
  getRun: (runId: string) => Promise<any>
  /** Stops the server and the replay server and removes the data directory. */
  stop: () => Promise<void>
}

/**
 * Starts the replay server (with `replay` options) and the real server process on a fresh data
 * directory `parley-e2e-<name>-*` as node `e2e-<name>`, with `vendorEnv` plus `env`.
 */
export async function startVendorServer(options: { name: string; env?: Record<string, string>; replay?: ReplayServerOptions }): Promise<VendorServer> {
  const dataDir = mkdtempSync(join(tmpdir(), `parley-e2e-${options.name}-`))
  let replay: ReplayServer | undefined
  let server: ServerProcess | undefined
  const stop = async () => {
    await server?.stop()
    await replay?.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
  let devKey: string
  try {
    replay = await startReplayServer(options.replay)
    server = await startServer({ env: vendorEnv(replay, dataDir, `e2e-${options.name}`, options.env), timeoutMs: 25_000 })
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  } catch (error) {
    await stop()
    throw error
  }
  const url = server.url

  const api: VendorServer['api'] = (path, init = {}) => request(url, path, { key: devKey, ...init })
  const newChat = async (): Promise<string> => {
    const res = await api('/api/v1/chats', { method: 'POST', body: {} })
    expect(res.status, res.text).toBe(201)
    return res.json().id
  }
  const getRun = async (runId: string) => {
    const res = await api(`/api/v1/runs/${runId}`)
    expect(res.status, res.text).toBe(200)
    return res.json()
  }
  return { replay, server, dataDir, devKey, api, newChat, getRun, stop }
}
