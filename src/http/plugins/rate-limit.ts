import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import { RateLimitedError } from '../../domain/errors.ts'

/**
 * docs/guide/errors.md's 429: at most `perMinute` requests a minute per API key (decision 011), counted by
 * this node. Registered inside the keyed scope after authentication, so a request without a valid
 * key is a 401 and counts for nothing. `Retry-After` says when the window frees a request.
 */
export async function installRateLimit(scope: FastifyInstance, perMinute: number): Promise<void> {
  await scope.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.identity?.keyId ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new RateLimitedError(
        `this API key made more than ${context.max} requests in a minute`,
        { limit: context.max, retry_after_seconds: Math.ceil(context.ttl / 1000) },
        `retry in ${context.after}`,
      ),
  })
}
