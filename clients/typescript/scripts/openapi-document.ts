import type { OpenAPI3 } from 'openapi-typescript'
import { createTestApp } from '../../../test/helpers/test-app.ts'

/** An OpenAPI document as served; the generator validates it. */
export type OpenApiDocument = OpenAPI3

/** `/openapi.json` of a server that is already running, such as a deployment or `npm start`. */
export async function fetchOpenApiDocument(baseUrl: string): Promise<OpenApiDocument> {
  const response = await fetch(new URL('/openapi.json', baseUrl), { signal: AbortSignal.timeout(10_000) })
  if (!response.ok) throw new Error(`GET ${baseUrl}/openapi.json answered ${response.status}`)
  return (await response.json()) as OpenApiDocument
}

/**
 * `/openapi.json` of the app built from this checkout's src/, listening on a free local port for the
 * time of one request: the document is read over HTTP as any client reads it, not from the
 * swagger plugin's memory, so what the client is generated from is what the server serves.
 */
export async function liveOpenApiDocument(): Promise<OpenApiDocument> {
  const context = await createTestApp()
  try {
    const address = await context.app.listen({ port: 0, host: '127.0.0.1' })
    return await fetchOpenApiDocument(address)
  } finally {
    await context.close()
  }
}
