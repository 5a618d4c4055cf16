import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { ValidateFunction } from 'ajv'
import { STATUS_CODES, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { Type } from '@sinclair/typebox'
import { WebSocketServer, type RawData, type WebSocket } from 'ws'
import { bearerToken } from '../../../domain/credentials.ts'
import { DomainError, InvalidRequestError, retryAfterOf, UnauthorizedError, UnavailableError, ValidationError } from '../../../domain/errors.ts'
import { findTooDeep } from '../../../domain/json-depth.ts'
import { runIdOf } from '../../../domain/openai/openai-ids.ts'
import type { ResponseObject } from '../../../domain/openai/response-object.ts'
import { createEventTranslator, type ResponsesEvent } from '../../../domain/openai/stream-events.ts'
import type { CompactionItem } from '../../../domain/openai/compaction-item.ts'
import { findIllFormedText } from '../../../domain/well-formed-text.ts'
import { databaseErrorOf } from '../../../store/sqlite-errors.ts'
import { stalledError, storageStall } from '../../../store/storage-stall.ts'
import type { AppDeps } from '../../app-deps.ts'
import type { BodyWork } from '../../body-work/body-work.ts'
import { createResponse, type CreatedResponse, type HeldResponse } from '../../openai/create-response.ts'
import { compactionOfRunId, responseOfRun } from '../../openai/facade-reads.ts'
import { withHintInMessage } from '../../send-envelope.ts'
import { toOpenAIError, type OpenAIError } from '../../openai/openai-error.ts'
import { statusOf } from '../../plugins/error-handler.ts'
import { problemsFromAjv } from '../../plugins/validation.ts'
import { OpenAICreateResponse } from '../../schemas/openai-responses.ts'
import { HEARTBEAT_MS } from '../../sse/write-run-stream.ts'
import type { TurnCaller } from '../../submit-turn.ts'
import { TURN_BODY_LIMIT, type TurnSlots } from '../api/v1/chats/responses.ts'
import { NamespaceHeader } from './responses.ts'

/**
 * The Responses API's WebSocket mode (issue 35, docs/decisions/055-openai-facade.md), as OpenAI's
 * SDK speaks it (`openai/resources/responses/ws`): one socket at `/v1/responses`, authenticated by
 * its upgrade's `Authorization: Bearer`; each `response.create` message is a `POST /v1/responses`
 * body (less `stream`, which the socket implies) run by `createResponse`, the path HTTP takes, and
 * answered with the same Responses events the SSE stream sends, one JSON text message each. One
 * response at a time per socket. Errors are `{type: 'error', status, error: {type, code, message,
 * param}}` messages, and the socket stays open. The socket keeps its latest response when it is not
 * to be stored, so `previous_response_id` can continue it here and nowhere else.
 */

export const RESPONSES_SOCKET_PATH = '/v1/responses'
/** A message may carry what a turn's body may (attachments included): the HTTP route's limit. */
export const MAX_MESSAGE_BYTES = TURN_BODY_LIMIT
/** Past this much unsent, a turn's events wait for the socket to drain: a slow reader holds no more. */
const HIGH_WATER_BYTES = 1024 * 1024
/** How long a closing socket has to answer the close handshake when the server shuts down. */
const CLOSE_GRACE_MS = 1_000
/** Statuses a held response may have: a failed one is not continued from the connection's cache. */
const CONTINUABLE = new Set<ResponseObject['status']>(['completed', 'incomplete'])

export type ResponsesSocketOptions = {
  /** The node's turn slots: a socket's turn holds one from its message until its terminal event. */
  slots: Pick<TurnSlots, 'acquire'>
  bodyWork: Pick<BodyWork, 'decodeAttachment' | 'parseJson'>
}

/** An error message of the socket, as OpenAI's SDK reads it (`ResponsesServerEvent.ResponseWsError`). */
export type SocketErrorEvent = {
  type: 'error'
  status: number
  error: OpenAIError['body']['error'] & { headers?: Record<string, string> }
}

type Validators = { body: ValidateFunction; headers: ValidateFunction }
type Admission = { caller: TurnCaller; namespace: string | null }
type SessionContext = { deps: AppDeps; options: ResponsesSocketOptions; validators: Validators; log: FastifyBaseLogger } & Admission

export function installResponsesSocket(app: FastifyInstance, deps: AppDeps, options: ResponsesSocketOptions): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false, clientTracking: false })
  const validators = compileValidators(app)
  const log = app.log.child({ transport: 'responses-websocket' })
  const sessions = new Set<SocketSession>()
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!isSocketPath(request.url)) return leaveToOthers(app.server, socket)
    socket.on('error', () => socket.destroy())
    let admission: Admission
    try {
      admission = admit(deps, request, validators)
    } catch (error) {
      return refuseUpgrade(socket, errorEventOf(error, log))
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const session = new SocketSession(ws, { deps, options, validators, log, ...admission })
      sessions.add(session)
      ws.once('close', () => sessions.delete(session))
    })
  }
  app.server.on('upgrade', onUpgrade)
  upgradeOnlyOurPath(app.server, onUpgrade)
  app.addHook('preClose', (done) => {
    for (const session of sessions) session.shutDown()
    done()
  })
}

const isSocketPath = (url: string | undefined) => {
  const path = (url ?? '').split('?')[0]
  // The router ignores a trailing slash (buildApp); the socket's path does too.
  return path === RESPONSES_SOCKET_PATH || path === `${RESPONSES_SOCKET_PATH}/`
}

/**
 * Node hands every request with an `Upgrade` header to the 'upgrade' listeners once there is one:
 * an upgrade to any other path stays an ordinary request (answered by the router as before) unless
 * another listener is there to take it.
 */
function upgradeOnlyOurPath(server: FastifyInstance['server'], ours: (...args: never[]) => void): void {
  // Node's option since 24.9, settable on the server; @types/node declares it on the options only.
  const upgrading = server as unknown as { shouldUpgradeCallback?: (request: IncomingMessage) => boolean }
  const previous = upgrading.shouldUpgradeCallback
  if (previous === undefined) return
  upgrading.shouldUpgradeCallback = (request) => {
    if (isSocketPath(request.url)) return true
    const others = server.listeners('upgrade').some((listener) => listener !== ours)
    return others && previous.call(server, request)
  }
}

/** Another path's upgrade: another listener's; with none (a Node before 24.9 sends them all here), nobody's, so closed. */
function leaveToOthers(server: FastifyInstance['server'], socket: Duplex): void {
  if (server.listenerCount('upgrade') === 1) socket.destroy()
}

/** The validators the HTTP route's body and headers go through, from the app's own compiler (its Ajv and shared schemas). */
function compileValidators(app: FastifyInstance): Validators {
  const compile = app.validatorCompiler
  if (!compile) throw new Error('installValidators must run before installResponsesSocket')
  const url = RESPONSES_SOCKET_PATH
  return {
    body: compile({ schema: Type.Ref(OpenAICreateResponse), method: 'POST', url, httpPart: 'body' }) as unknown as ValidateFunction,
    headers: compile({ schema: NamespaceHeader, method: 'GET', url, httpPart: 'headers' }) as unknown as ValidateFunction,
  }
}

/** The upgrade's caller, checked before the socket is accepted: in the order a keyed HTTP request is. */
function admit(deps: AppDeps, request: IncomingMessage, validators: Validators): Admission {
  if (storageStall.stalled()) throw stalledError()
  const token = bearerToken(request.headers.authorization)
  const identity = token === null ? null : deps.store.apiKeys.authenticate(token)
  if (!identity) throw new UnauthorizedError()
  assertPrimary(deps)
  if (!validators.headers(request.headers)) throw new ValidationError(problemsFromAjv(validators.headers.errors ?? [], 'header'))
  const namespace = request.headers['x-parley-namespace']
  return { caller: { orgId: identity.orgId, apiKeyId: identity.keyId }, namespace: typeof namespace === 'string' ? namespace : null }
}

/** Only the primary writes (decision 009): a replica relays HTTP writes to it, but not a socket's turns. */
function assertPrimary(deps: AppDeps): void {
  if (deps.role.current().kind === 'primary') return
  throw new UnavailableError('this node is a read replica: the WebSocket mode is served by the primary', undefined, 'connect again; use HTTP while no primary answers')
}

/** A refused upgrade: an HTTP answer with the error as OpenAI shapes it, then the connection goes. */
function refuseUpgrade(socket: Duplex, event: SocketErrorEvent): void {
  const body = JSON.stringify({ error: event.error })
  const retryAfter = event.error.headers?.['retry-after']
  const head = [
    `HTTP/1.1 ${event.status} ${STATUS_CODES[event.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    ...(retryAfter === undefined ? [] : [`retry-after: ${retryAfter}`]),
    'connection: close',
  ]
  socket.once('finish', () => socket.destroy())
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`)
}

/** Any error as the socket's error message: a domain error as OpenAI answers it over HTTP, anything else a 500. */
export function errorEventOf(error: unknown, log: FastifyBaseLogger): SocketErrorEvent {
  const known = error instanceof DomainError ? error : databaseErrorOf(error)
  if (!known) {
    log.error({ err: error }, 'unhandled error on a Responses WebSocket')
    const { status, body } = toOpenAIError(500, { code: 'internal', message: 'internal error' })
    return { type: 'error', status, error: body.error }
  }
  // As on HTTP (src/http/send-envelope.ts): the hint, which OpenAI's error has no field for, ends the message.
  const { status, body } = toOpenAIError(statusOf(known), withHintInMessage({ code: known.code, message: known.message, details: known.details, hint: known.hint ?? null }))
  const retryAfter = retryAfterOf(known)
  return { type: 'error', status, error: retryAfter === null ? body.error : { ...body.error, headers: { 'retry-after': String(retryAfter) } } }
}

const inProgressEvent = (): SocketErrorEvent => ({
  type: 'error',
  status: 400,
  error: { type: 'invalid_request_error', code: 'response_in_progress', message: 'a response is in progress on this socket: send the next response.create after its terminal event', param: null },
})

const shuttingDownEvent = (): SocketErrorEvent => ({
  type: 'error',
  status: 503,
  error: { type: 'server_error', code: 'server_shutting_down', message: 'the server is shutting down: connect again; a stored response can be read with GET /v1/responses/{id}', param: null },
})

type SteerMessage = { input: unknown; previousResponseId: unknown }
type ClientMessage = { kind: 'create'; body: OpenAICreateResponse } | ({ kind: 'steer' } & SteerMessage)

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** A text message's JSON, read as an HTTP body is (depth scanned first, large ones off the event loop). */
async function parseMessage(bodyWork: ResponsesSocketOptions['bodyWork'], data: RawData, isBinary: boolean): Promise<unknown> {
  if (isBinary) throw new InvalidRequestError('messages are JSON text frames: a binary frame is not read')
  const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
  const parsed = await bodyWork.parseJson(bytes)
  switch (parsed.kind) {
    case 'value':
      return parsed.value
    case 'too_deep':
      throw new ValidationError([parsed.problem])
    case 'invalid':
      throw new InvalidRequestError(`the message is not JSON: ${parsed.message}`)
    default: {
      const unknownKind: never = parsed
      throw new Error(`unknown parse result ${JSON.stringify(unknownKind)}`)
    }
  }
}

/** A `response.steer` message, or null for any other. */
function steerOf(value: unknown): SteerMessage | null {
  if (!isRecord(value) || value.type !== 'response.steer') return null
  return { input: value.input, previousResponseId: value.previous_response_id }
}

/** What a client message asks for; anything but `response.create` and `response.steer` is refused. */
function messageOf(value: unknown, validate: ValidateFunction): ClientMessage {
  const problem = (pointer: string, message: string): ValidationError => new ValidationError([{ in: 'body', pointer, message }])
  if (!isRecord(value)) throw problem('', 'must be an object with a type')
  const steer = steerOf(value)
  if (steer) return { kind: 'steer', ...steer }
  const { type, ...fields } = value
  if (type !== 'response.create') throw problem('/type', 'must be "response.create"')
  return { kind: 'create', body: createBodyOf(fields, validate) }
}

/** A `response.create`'s fields as a `POST /v1/responses` body, checked as that route checks its body. */
function createBodyOf(fields: Record<string, unknown>, validate: ValidateFunction): OpenAICreateResponse {
  // Every response streams on the socket: `stream` says nothing here (OpenAI: "should not be sent"), and `background` cannot be.
  const { stream: _implicit, ...body } = fields
  if (body.background === true) throw new ValidationError([{ in: 'body', pointer: '/background', message: 'is not supported over a WebSocket: every response streams on it' }])
  const tooDeep = findTooDeep(body)
  if (tooDeep) throw new ValidationError([tooDeep])
  const illFormed = findIllFormedText(body)
  if (illFormed.length > 0) throw new ValidationError(illFormed)
  if (!validate(body)) throw new ValidationError(problemsFromAjv(validate.errors ?? [], 'body'))
  return body as OpenAICreateResponse
}

/** Steering a running response is not offered: the answer OpenAI's protocol has for it, with the input handed back. */
function steerRefusal(message: SteerMessage): Record<string, unknown> {
  return {
    type: 'response.steer.failed',
    sequence_number: 0,
    error: { type: 'invalid_request_error', code: 'steering_not_supported', message: 'steering is not supported: send the input with the next response.create' },
    steer: { input: message.input ?? null, previous_response_id: typeof message.previousResponseId === 'string' ? message.previousResponseId : null },
  }
}

/**
 * One socket: its messages taken one at a time, and the response it keeps (`held`): its latest
 * response when that is not to be stored, with the chat it ran in, kept alive for as long as the
 * socket may continue it. Everything held is deleted when a newer response replaces it, when a
 * continuation of it fails, and when the socket closes (once a turn still running has settled).
 */
class SocketSession {
  private busy = false
  private closed = false
  private held: HeldResponse | null = null
  /** The turn in hand, to its settlement: closing waits for it before deleting what is held. */
  private turn: Promise<void> = Promise.resolve()
  private alive = true
  private readonly heartbeat: NodeJS.Timeout
  private readonly ws: WebSocket
  private readonly context: SessionContext

  constructor(ws: WebSocket, context: SessionContext) {
    this.ws = ws
    this.context = context
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary))
    ws.on('pong', () => (this.alive = true))
    // A frame over the size cap, bad UTF-8, a broken peer: ws closes the socket; 'close' cleans up.
    ws.on('error', (error) => context.log.debug({ err: error }, 'Responses WebSocket error'))
    ws.once('close', () => this.onClose())
    // A peer that stopped answering pings is cut off, so what it held does not outlive it for long.
    this.heartbeat = setInterval(() => this.ping(), HEARTBEAT_MS)
    this.heartbeat.unref()
  }

  /** Server shutdown: a turn in flight learns why its events stop; the socket is closed, then cut if the peer dawdles. */
  shutDown(): void {
    if (this.busy) this.send(shuttingDownEvent())
    this.ws.close(1001, 'server shutting down')
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref()
  }

  private ping(): void {
    if (!this.alive) return void this.ws.terminate()
    this.alive = false
    this.ws.ping()
  }

  private send(event: object, flushed?: (error?: Error) => void): void {
    this.ws.send(JSON.stringify(event), flushed)
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    // Decided as the message arrives: a second one before the first's terminal event is refused, not queued.
    if (this.busy) return void this.answerWhileBusy(data, isBinary)
    this.busy = true
    this.turn = this.handle(data, isBinary).finally(() => (this.busy = false))
  }

  /** While a response runs, a steer (the one message meant for then) is refused as steering; anything else as a second response. */
  private async answerWhileBusy(data: RawData, isBinary: boolean): Promise<void> {
    try {
      const steer = steerOf(await parseMessage(this.context.options.bodyWork, data, isBinary))
      this.send(steer ? steerRefusal(steer) : inProgressEvent())
    } catch (error) {
      this.send(errorEventOf(error, this.context.log))
    }
  }

  private async handle(data: RawData, isBinary: boolean): Promise<void> {
    try {
      const message = messageOf(await parseMessage(this.context.options.bodyWork, data, isBinary), this.context.validators.body)
      if (message.kind === 'steer') return this.send(steerRefusal(message))
      await this.respond(message.body)
    } catch (error) {
      this.send(errorEventOf(error, this.context.log))
    }
  }

  private onClose(): void {
    this.closed = true
    clearInterval(this.heartbeat)
    // The run goes on when its reader goes (as over HTTP); what the socket held goes once it settles.
    void this.turn.then(() => this.replaceHeld(null))
  }

  /** One response, from its admission to its terminal event; its slot is held as long as its events are sent. */
  private async respond(body: OpenAICreateResponse): Promise<void> {
    const release = this.context.options.slots.acquire()
    let settling: Promise<unknown> = Promise.resolve()
    try {
      assertPrimary(this.context.deps)
      const created = await this.create(body)
      const adopted = created.settled.then(
        (response) => {
          this.adopt(body, created, response)
          return response
        },
        (error: unknown) => {
          this.adopt(body, created, null)
          throw error
        },
      )
      settling = adopted.catch(() => undefined)
      await relay(this.ws, created, this.opening(created), adopted, this.context.log, compactionOfRunId(this.context.deps, created.runId))
    } finally {
      release()
    }
    // Ended by its terminal event, the turn is settled already; ended by the socket closing, not yet.
    await settling
  }

  private async create(body: OpenAICreateResponse): Promise<CreatedResponse> {
    const { deps, options, caller, namespace } = this.context
    const continuesHeld = this.held !== null && body.previous_response_id != null && runIdOf(body.previous_response_id) === this.held.runId
    try {
      return await createResponse(deps, options.bodyWork, caller, body, namespace, { keepUnstored: true, held: this.held })
    } catch (error) {
      // A continuation that fails drops what it continued: the client starts again from what it has.
      if (continuesHeld) this.replaceHeld(null)
      throw error
    }
  }

  private opening(created: CreatedResponse): ResponseObject {
    const { deps, caller } = this.context
    return responseOfRun(deps, deps.store.runs.get(caller.orgId, created.runId)!)
  }

  /**
   * A settled response becomes what the socket holds when it is not to be stored and may be
   * continued (and the socket is still open); whatever was held before is let go, and so is the
   * chat of a response not to be stored that is not kept.
   */
  private adopt(body: OpenAICreateResponse, created: CreatedResponse, response: ResponseObject | null): void {
    const throwaway = body.store === false
    const keep = throwaway && response !== null && CONTINUABLE.has(response.status) && !this.closed
    const heldChat = this.held?.chatId
    this.replaceHeld(keep ? { runId: created.runId, chatId: created.chat.id } : null)
    // A held chat continued in place was let go with what was held: it is deleted once, not twice.
    if (throwaway && !keep && created.chat.id !== heldChat) this.forget(created.chat.id)
  }

  private replaceHeld(next: HeldResponse | null): void {
    const previous = this.held
    this.held = next
    // A response continued in place leaves the chat held: it is deleted only once nothing holds it.
    if (previous && previous.chatId !== next?.chatId) this.forget(previous.chatId)
  }

  private forget(chatId: string): void {
    const { deps, caller, log } = this.context
    // Never thrown at the caller (a close handler, a settlement): a host stopping for shutdown may refuse.
    Promise.resolve()
      .then(() => deps.host.delete(caller.orgId, chatId))
      .catch((error: unknown) => log.warn({ err: error, chat_id: chatId }, 'a chat not to be stored could not be deleted'))
  }
}

/**
 * One response's events on the socket, in the order the SSE stream sends them
 * (src/http/sse/write-responses-stream.ts): the opening events, each frame translated as it comes,
 * then, once the run is settled, the terminal event with the response as the ledger holds it.
 * Resolves once the terminal event is handed to the socket, or when the socket closes first (the
 * run goes on). A reader slower than the run holds at most HIGH_WATER_BYTES before reading waits.
 */
function relay(
  ws: WebSocket,
  created: CreatedResponse,
  opening: ResponseObject,
  settled: Promise<ResponseObject>,
  log: FastifyBaseLogger,
  compactionItem: () => CompactionItem | null,
): Promise<void> {
  return new Promise((resolve) => {
    const translator = createEventTranslator(created.runId, { compactionItem })
    const source = created.events
    let cursor = 0
    let scheduled = false
    let draining = false
    let finished = false
    const send = (event: object, flushed?: () => void) => ws.send(JSON.stringify(event), flushed)
    const finish = () => {
      if (finished) return
      finished = true
      stopWaking()
      ws.off('close', finish)
      resolve()
    }
    const sendTerminal = () => {
      stopWaking()
      settled
        .then(
          (response) => translator.terminal(response).forEach((event) => send(event)),
          (error: unknown) => send(errorEventOf(error, log)),
        )
        .catch((error: unknown) => send(errorEventOf(error, log)))
        .finally(finish)
    }
    const sendBatch = (batch: ResponsesEvent[]) => {
      batch.forEach((event, i) => send(event, i === batch.length - 1 ? resume : undefined))
      draining = batch.length > 0 && ws.bufferedAmount > HIGH_WATER_BYTES
    }
    const pump = () => {
      scheduled = false
      if (finished || draining) return
      const batch: ResponsesEvent[] = []
      while (cursor < source.size) {
        const event = source.at(cursor++)!
        if (event.type !== 'frame') continue
        if (event.frame.event === 'done' || event.frame.event === 'error') {
          sendBatch(batch)
          return sendTerminal()
        }
        batch.push(...translator.frame(event.frame))
      }
      sendBatch(batch)
    }
    const schedule = () => {
      if (scheduled) return
      scheduled = true
      process.nextTick(pump)
    }
    function resume() {
      if (!draining) return
      draining = false
      schedule()
    }
    // A socket gone before the response was admitted reads nothing of it.
    if (ws.readyState !== ws.OPEN) return resolve()
    ws.once('close', finish)
    for (const event of translator.opening(opening)) send(event)
    const stopWaking = source.wake(schedule)
    schedule()
  })
}

