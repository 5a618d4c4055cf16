import type { ToolDefinition } from '../../src/domain/config/config-types.ts'

/**
 * A bundle of `count` tools shaped like a real integration's (issue 36 item 3: 2,000 of them, which
 * is about 1,010 KB of JSON, just under the config routes' 1 MiB body limit): a description, five
 * arguments (a bounded string, a bounded integer, an enum, a pattern, an array of `$ref`'d filters),
 * `required`, and a `$defs` entry. Each tool differs in its name, description and limits; `seed` changes every
 * text, so a bundle of another seed is new to every memo (token estimates among them).
 */
export function largeToolBundle(count = 2_000, seed = 0): ToolDefinition[] {
  return Array.from({ length: count }, (_, i) => {
    const n = seed * 100_003 + i
    return {
      name: `lookup_${seed}_${i}`,
      description: `Finds records of collection ${n} matching a query.`,
      ...(i % 2 === 0 ? { strict: true } : {}),
      input_schema: {
        type: 'object',
        properties: {
          query: { type: 'string', maxLength: 200 + (n % 50) },
          limit: { type: 'integer', minimum: 1, maximum: (n % 90) + 10 },
          sort: { enum: ['asc', 'desc'] },
          filters: { type: 'array', items: { $ref: '#/$defs/filter' } },
          region: { type: 'string', pattern: `^[a-z]{2}-${n % 10}$` },
        },
        required: ['query'],
        $defs: { filter: { type: 'object', properties: { field: { type: 'string' } }, required: ['field'] } },
      },
    }
  })
}
