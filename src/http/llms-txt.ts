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

## Documents

- [OpenAPI](/openapi.json): the machine-readable contract, generated from the route schemas.
- [Reference](/docs): the same, rendered for people.
- [Models](/v1/catalogue/models.md): the model catalogue with prices.
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
