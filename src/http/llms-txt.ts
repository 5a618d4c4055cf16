type OpenApiDoc = { paths?: object }
type Operation = { summary?: string; security?: unknown[] }

const INTRO = `# Parley

> Parley is a conversation API server. A chat is a ledger of parts (prompts, tool results,
> assistant messages, reasoning, tool calls). A turn is submitted to a chat and streamed back as
> server-sent events. Configuration (instructions, tools, budgets, retention) is versioned per namespace.

## How to call it

- Base path \`/api/v1\`. Send \`Authorization: Bearer <API_KEY>\` on every \`/api/v1\` route except
  \`/api/v1/version\` and \`/api/v1/updates\`. The organisation comes from the key.
- Errors are \`{"error":{"code","message","details"?,"hint"?}}\`. \`validation_failed\` (422) lists each
  problem in \`details.problems\` as \`{in, pointer, message}\` where \`pointer\` is a JSON pointer.
- Lists page with cursors: chats with \`after_id\` (older) / \`before_id\` (newer), history with
  \`before_ordinal\` / \`after_ordinal\`. Never compute a cursor; use the ones a page returns.
- A chat of another organisation answers exactly like a missing chat (404).
- To edit and regenerate, fork: \`POST /api/v1/chats/{chat_id}/fork\` \`{"up_to_ordinal"?, "title"?, "description"?,
  "user_metadata"?}\` answers 201 with a new chat (same namespace) holding the history up to that ordinal (absent:
  all of it; a running turn is never copied) with new ids; a tool call pending at the cut is pending there, and
  summaries are reused, not paid for again. A bad ordinal is 422 at \`/up_to_ordinal\`.

## A turn

\`POST /api/v1/chats/{chat_id}/responses\` with \`{"model": "<catalogue name>", "input": [parts]}\`. A part
is \`{"type":"prompt","text"}\` or \`{"type":"tool_result","tool_use_id","tool_name","text"}\`. A turn refused
before the stream opens is an HTTP error in the envelope above (402, 409, 422, 502 when the vendor failed
before its first byte: retry with \`retry_of\`). Otherwise the answer is 200 \`text/event-stream\`: frames of
\`event: NAME\`, \`data: JSON\`, \`id: <run_id>:<sequence number>\`, a blank line; lines starting with \`:\` are
heartbeats (every 15 s), skip them. Dropping the connection does not cancel the run: resume its stream
(below), or read \`GET /api/v1/runs/{run_id}\` and the history.

Events, in this order:

1. \`run\` \`{chat_id, run_id, closed_tool_calls}\`: always first; the tool calls this submission closed.
2. \`config_warnings\` \`{warnings}\`: always second (how configuration resolved; \`history_dropped\`); sent
   again after \`compacting\` if the warnings changed.
3. \`translation_warnings\` \`{warnings: [{code, message, details}]}\`: always third; a second one may come,
   always before the first \`block_start\`.
4. \`compacting\` \`{blocks, in_progress_elsewhere}\`: only when the turn waits for summaries of old history.
5. Content blocks, one at a time, never overlapping: \`block_start\` \`{kind}\` (\`text\`, \`reasoning\`,
   \`refusal\`, or \`tool_call\` with \`tool_name\`, \`tool_use_id\`), then \`delta\` \`{kind, text}\` (\`kind\`
   \`tool_input\` carries fragments of the call's JSON arguments), then \`block_stop\` \`{}\` once the block is stored.
6. Exactly one of \`done\` \`{stop_reason, usage, cost, cost_currency, pending_tool_calls, compaction,
   model_served, provider_response_id, server_tools}\` (after the run is settled) or \`error\` \`{code, message,
   details: {run_id}, hint?}\` (\`upstream_error\`, \`cancelled\`, \`chat_deleted\`, \`compaction_failed\`,
   \`unavailable\`, \`internal\`). Nothing follows it.

\`stop_reason\` \`tool_use\`: answer every \`pending_tool_calls\` item with a \`tool_result\` part in the next
turn; calls left unanswered are closed by the service with a tombstone (\`tombstone_reason\` \`abandoned\`).
Retry a failed run with \`{"model", "input": [], "retry_of": "<run_id>"}\`. Reusing an \`idempotency_key\`
within 24 h answers 409 naming the first run.

## Resuming a stream

\`GET /api/v1/runs/{run_id}/events\` streams a run's frames again, same events and ids: from the start, or
after the id sent as the \`Last-Event-ID\` header or the \`after\` query parameter (\`after\` wins). Reconnect
there with the last id you had to get every missed frame once, in order, to the end. Live while the run runs
on the node that answers; otherwise rebuilt from the ledger: each block's text as one delta (from your offset
inside it), and a rebuilt \`done\` has \`model_served\`, \`provider_response_id\`, \`compaction\` null. Ids only
grow; the shutdown \`unavailable\` error has no id (resume after the last frame that had one: a run cut off by
a restart ends with its \`interrupted\` error). An id of another run is 422; another organisation's run is 404
as a missing one. On a LiteFS replica send the turn's \`x-parley-txid\` back so the read waits for the run.
Never resume by sending the turn's POST again: that is a new turn.

## The sandbox

Offline models, on unless \`NODE_ENV=production\`: \`sandbox/echo\` (128k window), \`sandbox/echo-8k\` (8,192:
packing and compaction show with little text), \`sandbox/echo-1m\` (1M, prices double past 200k context
tokens), \`sandbox/agent\` (echo, but a user's turn that offers tools first calls the first one, with arguments its
schema takes, and echoes the tool's output when it comes back). They answer \`echo: \` plus the prompt's text (or the text of the tool results that end the
context). Lines of the newest prompt starting with \`/\` steer them:

- \`/think TEXT\`: a reasoning block with TEXT first.
- \`/tool NAME {json}\`: a \`tool_call\` block; stop reason \`tool_use\` (repeatable).
- \`/long N\`: N words, cut at \`max_tokens\` (stop reason \`max_tokens\`).
- \`/slow MS\`: waits MS ms before each delta.
- \`/refuse\`: a refusal block; stop reason \`refusal\`.
- \`/fail\`: the provider fails before its first byte: HTTP 502 \`upstream_error\`, run \`failed\`.
- \`/flaky\`: like \`/fail\`, but a retry of that run (\`retry_of\`) succeeds.
- \`/fail-mid\`: some text, then the stream's \`error\` event; run \`failed\`.
- \`/context\`: answers with the context the model received, as JSON (system, tools, messages).
- \`/fail-summary\`: a history block holding this line cannot be summarised (its compaction run fails).

Usage counts the packed prompt as input; the part repeating the chat's previous request from its start
is reported as \`cache_read_tokens\`, as a vendor's prompt cache would.

## OpenAI-compatible API

Clients of OpenAI's Responses API work unchanged with \`baseURL\` set to \`<this server>/v1\` and a Parley key:
\`POST /v1/responses\` (streaming, \`background\`, \`store: false\`, \`previous_response_id\`, \`conversation\`), its
WebSocket mode on the same path, \`/v1/responses/input_tokens\`, \`/v1/responses/compact\` and \`/v1/conversations\`
with their items. Chat Completions clients use \`POST /v1/chat/completions\` (stateless and billed; \`X-Parley-Chat: <chat id>\`
appends to a chat) and \`GET /v1/models\`. A response is a run, a conversation a chat, items the chat's parts; errors there are OpenAI's
\`{error: {message, type, param, code}}\`. See \`docs/guide/openai-sdk.md\`.

## Documents

- [OpenAPI](/openapi.json): the machine-readable contract, generated from the route schemas.
- [Reference](/docs): the same, rendered for people.
- [Models](/v1/catalogue/models.md): the model catalogue with prices.
- The guide, in the source repository at \`docs/guide/\`: concepts with runnable examples
  (\`turn-stream.md\` for every event and the order rules, \`sandbox.md\` for the models and lines,
  \`runs.md\`, \`tool-calls.md\`, \`context.md\`, \`billing-and-usage.md\`, \`errors.md\`, \`openai-sdk.md\`).
`

/** llms.txt: a fixed introduction plus the operation list taken from the live OpenAPI document. */
export function renderLlmsTxt(doc: OpenApiDoc): string {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>
  const operations = Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => {
      const keyed = Array.isArray(op.security) && op.security.length > 0 ? ' (API key)' : ''
      return `- \`${method.toUpperCase()} ${path}\`${keyed}: ${op.summary ?? ''}`
    }),
  )
  return `${INTRO}\n## Operations\n\n${operations.join('\n')}\n`
}
