import cookie from '@fastify/cookie'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import scalar from '@scalar/fastify-api-reference'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import { DEFAULT_MAX_CONCURRENT_TURNS, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_SHED_FROM_TURNS, DEFAULT_SHED_LOOP_DELAY_MS, defaultReaderLimits } from '../settings.ts'
import { eventReaders, type ReaderLimits } from './sse/event-readers.ts'
import { watchLoopDelay } from './loop-delay.ts'
import type { AppDeps } from './app-deps.ts'
import { answerConnect, clientErrorHandler, deferContinue, frameworkErrors } from './edge-errors.ts'
import { requireApiKey } from './plugins/auth.ts'
import { createBodyWork } from './body-work/body-work.ts'
import { installBoundedBodies } from './plugins/bounded-body.ts'
import { installErrorHandler } from './plugins/error-handler.ts'
import { installPrimaryRouting } from './plugins/primary-routing.ts'
import { installRateLimit } from './plugins/rate-limit.ts'
import { installValidators } from './plugins/validation.ts'
import { redactText, serializeError, serializeRequest } from './redact-url.ts'
import { chatRoutes } from './routes/api/v1/chats/index.ts'
import { historyRoutes } from './routes/api/v1/chats/history.ts'
import { configRoutes } from './routes/api/v1/config/index.ts'
import { modelRoutes } from './routes/api/v1/models.ts'
import { namespaceRoutes } from './routes/api/v1/namespaces.ts'
import { usageRoutes } from './routes/api/v1/usage.ts'
import { responseRoutes, turnSlots } from './routes/api/v1/chats/responses.ts'
import { openaiResponseRoutes } from './routes/v1/responses.ts'
import { openaiChatCompletionRoutes } from './routes/v1/chat-completions.ts'
import { OPENAI_CHAT_SCHEMAS } from './schemas/openai-chat-completions.ts'
import { installResponsesSocket } from './routes/v1/responses-socket.ts'
import { openaiConversationRoutes } from './routes/v1/conversations.ts'
import { OPENAI_CONVERSATION_SCHEMAS } from './schemas/openai-conversations.ts'
import { OPENAI_SCHEMAS } from './schemas/openai-responses.ts'
import { runRoutes } from './routes/api/v1/runs.ts'
import { rootRoutes } from './routes/root.ts'
import { healthRoutes } from './routes/health.ts'
import { HEALTH_SCHEMAS } from './schemas/health.ts'
import { catalogueRoutes } from './routes/v1/catalogue.ts'
import { Catalogue, CatalogueModel, CatalogueModelResponse } from './schemas/catalogue.ts'
import { ChatCreated, ChatPage, ChatSummary, CreateChatRequest, ForkChatRequest } from './schemas/chats.ts'
import { ERROR_SCHEMAS, ErrorBody, ErrorEnvelope } from './schemas/common.ts'
import { EVENT_SCHEMAS } from './schemas/events.ts'
import { openapiOptions } from './schemas/openapi-document.ts'
import { treatEmptyBodyAsNone } from './plugins/empty-body.ts'
import { cachedSerializerFactory } from './schemas/serializers.ts'
import { CONFIG_SCHEMAS } from './schemas/config.ts'
import { USAGE_SCHEMAS } from './schemas/usage.ts'
import { RESPONSE_SCHEMAS } from './schemas/responses.ts'
import { HistoryBody, HistoryMedia, HistoryPageResponse, HistoryPart } from './schemas/history.ts'
import { ApiVersion, Discovery, NamespacePage, PublicPlatformUpdate } from './schemas/public.ts'
import { stalledError, storageStall } from '../store/storage-stall.ts'

/** Bodies other than turns are capped at 1 MiB (docs/guide/errors.md). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024

const SHARED_SCHEMAS = [
  ...OPENAI_SCHEMAS,
  ...OPENAI_CONVERSATION_SCHEMAS,
  ...OPENAI_CHAT_SCHEMAS,
  ErrorBody,
  ErrorEnvelope,
  ...ERROR_SCHEMAS,
  CreateChatRequest,
  ForkChatRequest,
  ChatCreated,
  ChatSummary,
  ChatPage,
  HistoryBody,
  HistoryMedia,
  HistoryPart,
  HistoryPageResponse,
  Discovery,
  ApiVersion,
  PublicPlatformUpdate,
  NamespacePage,
  CatalogueModel,
  Catalogue,
  CatalogueModelResponse,
  ...CONFIG_SCHEMAS,
  ...USAGE_SCHEMAS,
  ...RESPONSE_SCHEMAS,
  ...HEALTH_SCHEMAS,
  ...EVENT_SCHEMAS,
]

export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.key',
  '*.token',
  '*.data_base64',
]

export type BuildAppOptions = {
  logger?: FastifyServerOptions['logger']
  /** Requests a minute per API key on this node (decision 011); absent: no limit. */
  rateLimitPerMinute?: number
  /** How long a client may take to send a whole request, headers and body; default 60 s (REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number
  /** Turns this node serves at once before a new one answers 503 (MAX_CONCURRENT_TURNS, decision 033); default 1024. */
  maxConcurrentTurns?: number
  /** While this many turns are in flight and the loop runs this late, new turns answer 503 (decision 033). */
  shedLoopDelayMs?: number
  shedFromTurns?: number
  /** Readers of runs' events held open at once, per run, per key and in all (docs/decisions/062-bounded-event-readers.md). */
  readerLimits?: ReaderLimits
}

/**
 * Deadlines for receiving a request (issue 11: slow bodies held connections forever). Node's HTTP
 * server measures them from the start of each request to its last body byte, and never afterwards:
 * a turn's stream lasts as long as its run. Node checks them every connectionsCheckingInterval
 * (30 s by default, too coarse for a 60 s deadline), so a late sender is closed within a second of
 * its deadline, with a 408 in the error envelope written by clientErrorHandler (edge-errors.ts). A connection that never sends
 * a byte is closed at the headers deadline; between requests, keep-alive (Fastify's 72 s) applies.
 * There is no socket inactivity timeout (Fastify's connectionTimeout stays 0): a quiet stream is
 * not a slow client.
 */
export function receiveDeadlines(requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS) {
  const headersTimeout = Math.min(10_000, requestTimeoutMs)
  return {
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
    },
  }
}

/**
 * A connection whose response went out before its request's body was read (a 401 or 404 answered
 * from the headers; Node then discards the rest of the body) is neither idle nor in flight: Node's
 * close() spares it, and stops checking request deadlines, so app.close() waited for the client to
 * finish or hang up (measured: 30 s and more; the shutdown's 5 s bound hid it). Closing, the server
 * destroys such connections, and one answered so while it closes; streams still being answered are
 * left to end (docs/decisions/009-multi-node-litefs.md, "Graceful shutdown").
 */
function closeAnsweredConnections(app: FastifyInstance): void {
  const answered = new Set<Socket>()
  app.server.on('request', (req, res) => {
    const socket = req.socket
    res.once('finish', () => {
      if (req.complete) return
      if (!app.server.listening) return void socket.destroy()
      answered.add(socket)
      const forget = () => answered.delete(socket)
      req.once('end', forget)
      socket.once('close', forget)
    })
  })
  app.addHook('preClose', (done) => {
    for (const socket of answered) socket.destroy()
    answered.clear()
    done()
  })
}

/**
 * Whatever logger the caller asks for logs requests through the redacting `req` serializer
 * (no secret in a logged URL, no headers), and redacts the known secret paths unless told otherwise.
 * Messages (`msg`, Fastify's among them) and errors' messages and stacks may quote a URL: they are
 * scrubbed by `redactText` too.
 */
function loggerOptions(logger: BuildAppOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return false
  const base = logger === true ? {} : logger
  return {
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    ...base,
    serializers: { ...base.serializers, req: serializeRequest, err: serializeError, msg: redactText },
  }
}

export async function buildApp(deps: AppDeps, options: BuildAppOptions = {}) {
  const deadlines = receiveDeadlines(options.requestTimeoutMs)
  const app = Fastify({
    logger: loggerOptions(options.logger),
    bodyLimit: DEFAULT_BODY_LIMIT,
    ...deadlines,
    // A missing Host is answered in the envelope by the error handler's hook, not by Node's empty 400.
    http: { ...deadlines.http, requireHostHeader: false },
    // Rejections before routing answer in the error envelope too (issue 11), without echoing the URL.
    clientErrorHandler,
    frameworkErrors,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    routerOptions: { ignoreTrailingSlash: true },
    // Each distinct response schema (the error envelope above all) is compiled once (decision 019).
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Expect: 100-continue is answered once the request has passed its checks, CONNECT with a 405
  // (decision 030): both in the envelope, never a bare 100 before a refusal or a closed socket.
  deferContinue(app.server)
  closeAnsweredConnections(app)
  app.server.on('connect', answerConnect(app))

  app.decorateRequest('identity', null)
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })

  // External plugins first.
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  installValidators(app, SHARED_SCHEMAS)
  installErrorHandler(app)
  // Route, key, declared size, encoding, then depth from the raw bytes, then JSON.parse (decision 030).
  // Large bodies and attachments are read on worker threads (docs/decisions/034-body-work-off-the-event-loop.md).
  const bodyWork = createBodyWork()
  app.addHook('onClose', () => bodyWork.close())
  installBoundedBodies(app, DEFAULT_BODY_LIMIT, bodyWork)
  const loop = watchLoopDelay()
  app.addHook('onClose', async () => loop.stop())
  // Before any route reads a body: on a replica, writes go to the primary whole.
  installPrimaryRouting(app, deps.role, deps.position, deps.nodeId)
  // Bodies are JSON only: Fastify's default text/plain parser would hand a string to the
  // validator (a confusing 422) where decisions say an unsupported content type is 400.
  app.removeContentTypeParser('text/plain')
  await app.register(cookie)
  await app.register(swagger, openapiOptions(deps.build.version))
  // The reference serves the document itself (/docs/openapi.json and .yaml): given only a URL it has none to serve.
  await app.register(scalar, { routePrefix: '/docs', configuration: { content: () => app.swagger() } })
  treatEmptyBodyAsNone(app)

  // Routes: public first, then everything behind an API key.
  await app.register(rootRoutes(deps))
  await app.register(healthRoutes(deps))
  await app.register(catalogueRoutes(deps))
  await app.register(async (keyed) => {
    keyed.addHook(
      'onRequest',
      requireApiKey((secret, request) => {
        if (deps.reads && request.routeOptions.config.readsOffThread) return deps.reads.authenticate(secret)
        // Every other keyed route reads on this thread: while litefs does not answer, that read
        // would hold the event loop until it does (decision 048), so the request is refused now.
        if (storageStall.stalled()) throw stalledError()
        return deps.store.apiKeys.authenticate(secret)
      }),
    )
    if (options.rateLimitPerMinute !== undefined) await installRateLimit(keyed, options.rateLimitPerMinute)
    await keyed.register(chatRoutes(deps))
    await keyed.register(historyRoutes(deps))
    await keyed.register(namespaceRoutes(deps))
    await keyed.register(modelRoutes(deps))
    await keyed.register(configRoutes(deps, { bodyWork }))
    await keyed.register(usageRoutes(deps))
    const limits = {
      maxConcurrentTurns: options.maxConcurrentTurns ?? DEFAULT_MAX_CONCURRENT_TURNS,
      shedLoopDelayMs: options.shedLoopDelayMs ?? DEFAULT_SHED_LOOP_DELAY_MS,
      shedFromTurns: options.shedFromTurns ?? DEFAULT_SHED_FROM_TURNS,
    }
    const slots = turnSlots(limits, loop)
    await keyed.register(responseRoutes(deps, { slots, bodyWork }))
    // The OpenAI facade (decision 055): the same turns, through the same slots.
    await keyed.register(openaiResponseRoutes(deps, { slots, bodyWork }))
    // Chat Completions and Models (decision 063): the same turns through the Responses facade's path.
    await keyed.register(openaiChatCompletionRoutes(deps, { slots, bodyWork }))
    installResponsesSocket(keyed, deps, { slots, bodyWork })
    await keyed.register(openaiConversationRoutes(deps))
    await keyed.register(runRoutes(deps, { readers: eventReaders(options.readerLimits ?? defaultReaderLimits(limits.maxConcurrentTurns)) }))
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  await app.ready()
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
