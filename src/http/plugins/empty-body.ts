import type { FastifyInstance } from 'fastify'

/**
 * A route that takes no body (a DELETE, a cancel) sent `content-type: application/json` with no
 * body at all is a request without a body, as clients that set the header on every call send it:
 * Fastify would otherwise run its JSON parser on nothing and answer 400. A body that is there is
 * still parsed (and rejected when it is malformed), and routes that take a body are left alone.
 */
export function treatEmptyBodyAsNone(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.schema?.body !== undefined) return
    const { headers } = request
    const empty = headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0')
    if (empty && headers['content-type'] !== undefined) delete headers['content-type']
  })
}
