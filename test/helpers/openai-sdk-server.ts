import OpenAI from 'openai'
import { afterAll, beforeAll } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from './test-app.ts'
import { sandboxCatalogue } from './turns.ts'

export type SdkServer = { ctx: TestContext; org: TestOrg; sdk: OpenAI; port: number; baseURL: string }

/**
 * A real listening server on the sandbox catalogue, with a funded organisation and the official
 * `openai` client pointed at its `/v1` (only `baseURL` and `apiKey` changed), for a test file: set
 * up in `beforeAll`, closed in `afterAll`. Read its fields inside tests.
 */
export function openaiSdkServer(): SdkServer {
  const server = {} as SdkServer
  beforeAll(async () => {
    server.ctx = await createTestApp({ catalogue: sandboxCatalogue() })
    await server.ctx.app.listen({ port: 0, host: '127.0.0.1' })
    server.port = (server.ctx.app.server.address() as { port: number }).port
    server.baseURL = `http://127.0.0.1:${server.port}/v1`
    server.org = server.ctx.org()
    server.ctx.store.balance.add(server.org.orgId, 'topup', '10')
    server.sdk = new OpenAI({ baseURL: server.baseURL, apiKey: server.org.key, maxRetries: 0 })
  })
  afterAll(async () => {
    await server.ctx?.close()
  })
  return server
}
