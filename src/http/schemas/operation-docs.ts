/**
 * What a reader of `/openapi.json` (or `/docs`) needs per operation beyond its summary: a
 * description, and an example request that works against a fresh development server (the test
 * test/http/openapi-examples.test.ts sends every one). In `params`, `$NAME` is a shell variable of
 * the curl sample (an id from an earlier call); a path parameter not given is `$<PARAM>`.
 */
export type OperationExample = {
  params?: Record<string, string>
  query?: Record<string, string>
  body?: unknown
  /** The answer is an event stream (curl -N). */
  stream?: boolean
}
/** `description` is left out where the route describes itself. */
export type OperationDoc = { description?: string; example: OperationExample }

type ConfigKind = { name: string; segment: string; what: string; publish: unknown; byModel?: boolean }

const CONFIG_KINDS: ConfigKind[] = [
  {
    name: 'Instructions',
    segment: 'instructions',
    what: 'system instructions',
    publish: { body: 'You are a support assistant for Acme. Answer briefly.', mode: 'append', namespace: 'acme/support' },
  },
  {
    name: 'Tools',
    segment: 'tools',
    what: 'tool definitions',
    publish: {
      mode: 'append',
      namespace: 'acme/support',
      definitions: [{ name: 'lookup_order', description: 'Find an order by its number', input_schema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] } }],
    },
  },
  { name: 'RetentionPolicy', segment: 'retention', what: 'retention rules', publish: { rules: { version: 1, anchor_parts: 2 }, namespace: 'acme/support' } },
  {
    name: 'Budget',
    segment: 'budgets',
    what: 'context budgets',
    byModel: true,
    publish: { budget: { version: 3, headroom: 0.1, history_mode: 'summarize', max_history_tokens: 64000 }, namespace: 'acme/support' },
  },
]

const SCOPE =
  'The scope is `namespace` (absent: the organisation-global level); a chat receives the levels from the global one down to its own namespace.'

function configDocs(kind: ConfigKind): Record<string, OperationDoc> {
  const scope = kind.byModel ? `${SCOPE} \`model\` (a model id) narrows a budget to one model.` : SCOPE
  return {
    [`listActive${kind.name}`]: {
      description: `The active ${kind.what} at exactly one scope (not inherited ones: see \`GET /api/v1/config/resolved\`). ${scope}`,
      example: { query: { namespace: 'acme/support' } },
    },
    [`publish${kind.name}`]: {
      description: `Publishes a new version of the ${kind.what} of a scope and makes it the active one; earlier versions stay readable and can be activated again. Later turns of chats in the scope (and beneath it) use it.`,
      example: { body: kind.publish },
    },
    [`withdraw${kind.name}`]: {
      description: `Leaves the scope without an active version of its ${kind.what}: the scope inherits again. \`was_active\` says whether there was one. ${scope}`,
      example: { query: { namespace: 'acme/support' } },
    },
    [`listVersionsOf${kind.name}`]: {
      description: `Every version of the ${kind.what} published at one scope, newest first, active or not. ${scope}`,
      example: { query: { namespace: 'acme/support' } },
    },
    [`get${kind.name}Version`]: {
      description: `One version of the ${kind.what} by its id, with its document and whether it is active.`,
      example: { params: { id: '$VERSION_ID' } },
    },
    [`activate${kind.name}Version`]: {
      description: `Makes an earlier (or withdrawn) version of the ${kind.what} the active one of its scope again.`,
      example: { params: { id: '$VERSION_ID' } },
    },
  }
}

export const operationDocs: Record<string, OperationDoc> = {
  discover: {
    description: 'Where everything is: the reference (`/docs`), this document, `llms.txt` and the API versions. No API key.',
    example: {},
  },
  getLlmsTxt: {
    description: 'The API in plain text for LLM agents: operations, the event stream and the sandbox model. No API key.',
    example: {},
  },
  getVersion: { description: 'The running build (`version`, `commit`) and the API version. No API key.', example: {} },
  getApiV1: { description: 'The same discovery document as `/`, under the API prefix. No API key.', example: {} },
  listUpdates: { description: 'Release notes and notices of the platform, newest first. No account data; no API key.', example: {} },
  getLiveness: { example: {} },
  getReadiness: { example: {} },
  getCatalogue: {
    description:
      'Every active model with its `name` (what a turn sends as `model`), provider, context window, media it accepts, reasoning support and prices per million tokens. No API key.',
    example: {},
  },
  getCatalogueMarkdown: { description: 'The catalogue as a markdown table, for people and agents. No API key.', example: {} },
  getCatalogueModel: {
    description: 'One active model by its public name; names contain slashes (`sandbox/echo`), which stay unescaped in the path. No API key.',
    example: { params: { name: 'sandbox/echo' } },
  },
  listChats: {
    description:
      'Chats of your organisation, newest first, in pages of `limit` (1-100, clamped). `namespace` keeps that scope and everything beneath it. Page with `after_id` (older) or `before_id` (newer) set to `last_id` / `first_id` of a page; not both.',
    example: { query: { namespace: 'acme', limit: '10' } },
  },
  createChat: {
    description:
      'Creates an empty chat. Everything is optional: `namespace` (immutable; decides which instructions, tools, retention and budgets its turns receive), `title`, `description`, `user_metadata` (a JSON object of at most 1024 bytes). `{}` is enough.',
    example: { body: { namespace: 'acme/support', title: 'Refund question', user_metadata: { ticket: 42 } } },
  },
  forkChat: {
    description:
      'Creates a new chat in the same namespace holding a copy of this chat\'s history up to `up_to_ordinal` (absent: all of it), in order, with new part ids and ordinals; attachments and the summaries of blocks wholly inside the copy come along (summaries are reused, not made again). A tool call pending at the cut is pending in the fork. While a run is running only settled parts are copied. `title`, `description`, `user_metadata` as in chat creation. The two chats are independent afterwards.',
    example: { body: { title: 'Try another answer' } },
  },
  getChat: { description: 'One chat with its `length` (parts in its ledger) and `updated_at`.', example: {} },
  deleteChat: {
    description: 'Deletes the chat and its whole ledger; a run still streaming is stopped. A second delete answers 404.',
    example: {},
  },
  getChatHistory: {
    description:
      'The ledger, one page at a time, oldest first within a page; without a cursor, the newest page. Page back with `before_ordinal` set to the page\'s `first_ordinal`, forward with `after_ordinal`; ordinals are not contiguous, use the cursors given. `include`: `stubs` (media described, no bytes; default), `none`, `full` (bytes as base64; `limit` at most 20).',
    example: { query: { limit: '50' } },
  },
  createResponse: {
    example: {
      stream: true,
      body: { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/think about it\nhello' }] },
    },
  },
  listNamespaces: { description: 'Every namespace a chat of yours uses, ascending; chats without a namespace add nothing.', example: {} },
  listModels: {
    description: 'The active models at your organisation\'s prices (markup included): the catalogue as your bills count it.',
    example: {},
  },
  getDefaultPolicies: {
    description: 'The platform\'s default context budget and retention rules: what applies where nothing is published.',
    example: {},
  },
  listConfigNamespaces: { description: 'Namespaces used by chats or by any configuration, ascending.', example: {} },
  resolveConfig: {
    description:
      'Instructions, tools and retention as a chat in `namespace` would receive them now: every level merged by its mode (`append` or `replace`), the versions used, an estimate of their tokens, and warnings (e.g. a tool shadowed by a nearer level).',
    example: { query: { namespace: 'acme/support' } },
  },
  resolveBudget: {
    description: 'The context budget in force for a namespace and model, and where it comes from (a policy or the platform default).',
    example: { query: { namespace: 'acme/support' } },
  },
  getUsage: {
    description:
      'Tokens and model-call spend over a `range` (24h, 7d, 30d, 90d) ending now, optionally binned (`bin`: hour, day) and grouped (`group_by`: model, namespace, api_key, entry_type, organisation, run). Rows may come from a cache (`cached`), so they can lag by minutes.',
    example: { query: { range: '7d', bin: 'day', group_by: 'model' } },
  },
  getRun: {
    description:
      'One run: `status` (the durable answer after a dropped stream), usage, cost (null until settled), latency, the vendor\'s request id and the `manifest` of the context and configuration it was given.',
    example: {},
  },
  getRunEvents: {
    description:
      "The run's stream of events, in the turn stream's grammar with the same `id:`s: from the start, or after the `Last-Event-ID` header or the `after` parameter. Live while the run streams on the node; rebuilt from the ledger once it has ended, a block's text then in one delta. Resume a dropped turn with it (docs/guide/turn-stream.md).",
    example: {},
  },
  cancelRun: {
    description: 'Stops a running run: its output so far is kept and it is settled as `cancelled`; its stream ends with an `error` event of code `cancelled`. A finished run is returned unchanged. No body.',
    example: {},
  },
  ...Object.assign({}, ...CONFIG_KINDS.map(configDocs)),
  // The OpenAI facade (docs/guide/openai-sdk.md, docs/decisions/055-openai-facade.md).
  openaiCreateResponse: { example: { body: { model: 'sandbox/echo', input: 'Hello', metadata: { ticket: '42' } } } },
  openaiCreateChatCompletion: { example: { body: { model: 'sandbox/echo', messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'Hello' }] } } },
  openaiListModels: { description: 'The active catalogue models in OpenAI\'s list shape: `id` is the catalogue name a request sends as `model`, `owned_by` its provider. Parley\'s own catalogue, with prices and limits, is GET /v1/catalogue.', example: {} },
  openaiGetModel: { description: 'One active catalogue model by its name, in OpenAI\'s shape; names contain slashes (`sandbox/echo`), which stay unescaped in the path.', example: { params: { name: 'sandbox/echo' } } },
  openaiCountInputTokens: {
    description: 'The input a response would send, packed as its turn would be (history under the budget, configured instructions and tools, the input), counted as the model\'s vendor is expected to count it. Nothing runs and nothing is kept.',
    example: { body: { model: 'sandbox/echo', input: 'How long is this?' } },
  },
  openaiCompactResponse: { example: { body: { model: 'sandbox/echo', input: [{ role: 'user', content: 'My name is Alice.' }, { role: 'assistant', content: 'Hello Alice.' }] } } },
  openaiGetResponse: { description: 'A response (a customer run) as the ledger holds it: status, output items, usage and what the request asked. A response made with `store: false` answers 404.', example: {} },
  openaiCancelResponse: { description: 'Stops a response in progress, as POST /api/v1/runs/{run_id}/cancel does: its output so far is kept and billed, and it ends `cancelled`. A finished response is returned unchanged.', example: {} },
  openaiListInputItems: { description: 'The items a response was given, as its chat\'s ledger holds them: its input, carried history and closed calls, newest first unless `order=asc`.', example: { query: { order: 'asc', limit: '20' } } },
  openaiCreateConversation: { description: 'Creates a conversation: a chat, in the namespace `X-Parley-Namespace` names (else the organisation\'s default scope), with `metadata` as its user_metadata and any `items` (user and assistant messages of text) as its first parts.', example: { body: { metadata: { topic: 'refunds' }, items: [{ type: 'message', role: 'user', content: 'Hello' }] } } },
  openaiGetConversation: { description: 'A conversation (a chat): its id, when it was made and its `metadata` (the chat\'s user_metadata).', example: {} },
  openaiUpdateConversation: { description: "Replaces a conversation's `metadata` (the chat's user_metadata); its items are untouched.", example: { body: { metadata: { topic: 'billing' } } } },
  openaiDeleteConversation: { description: 'Deletes a conversation and its ledger, as DELETE /api/v1/chats/{chat_id} does; a response still running is stopped. Its responses stay billed.', example: {} },
  openaiListConversationItems: { description: "A conversation's items, its chat's ledger parts, newest first unless `order=asc`; page with `after` set to the last item id of a page.", example: { query: { order: 'asc' } } },
  openaiAddConversationItems: { example: { body: { items: [{ type: 'message', role: 'user', content: 'One more thing.' }] } } },
  openaiGetConversationItem: { description: 'One item of a conversation by its id.', example: {} },
  openaiDeleteConversationItem: {
    description:
      "Erases an item from a conversation: its ledger part goes (a gap is left in the ordinals), with the rest of a function call's exchange (the call and its output go together) and the chat's summaries written from it, so no later response sees it. Items the chat's own runs answered keep their ids. Answers the conversation.",
    example: {},
  },
}
