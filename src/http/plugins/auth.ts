import type { FastifyRequest } from 'fastify'
import { bearerToken } from '../../domain/credentials.ts'
import { UnauthorizedError } from '../../domain/errors.ts'
import type { ApiKeyIdentity } from '../../store/api-keys.ts'

declare module 'fastify' {
  interface FastifyRequest {
    identity: ApiKeyIdentity | null
  }
  interface FastifyContextConfig {
    /**
     * The route reads on the read thread (src/store/read-thread.ts, decision 048), its key lookup
     * included: it goes on while litefs is stalled, when every other keyed route answers 503.
     */
    readsOffThread?: boolean
  }
}

/** onRequest hook for keyed routes: runs before the body is parsed, so 401 wins over 413/422. */
export function requireApiKey(authenticate: (secret: string, request: FastifyRequest) => ApiKeyIdentity | null | Promise<ApiKeyIdentity | null>) {
  return async function checkApiKey(request: FastifyRequest): Promise<void> {
    const token = bearerToken(request.headers.authorization)
    const identity = token === null ? null : await authenticate(token, request)
    if (!identity) throw new UnauthorizedError()
    request.identity = identity
  }
}

/** The API key a keyed route's request was made with. */
export function keyOf(request: FastifyRequest): string {
  if (!request.identity) throw new UnauthorizedError()
  return request.identity.keyId
}

/** The authenticated organisation of a keyed route's request. */
export function orgOf(request: FastifyRequest): string {
  if (!request.identity) throw new UnauthorizedError()
  return request.identity.orgId
}
