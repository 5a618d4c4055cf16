import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider'
import { createHash } from 'node:crypto'
import { saturatingAdd } from '../../domain/tokens/estimate-tokens.ts'
import { promptTokenItems, type PromptTokenItem } from '../estimate-prompt-tokens.ts'

/** One item of a request as the prefix cache compares it: what it is, and what it costs. */
export type PrefixItem = { identity: string; tokens: number }

type ContentItem = Extract<PromptTokenItem, { kind: 'content' }>['item']

const digest = (...chunks: (string | Uint8Array)[]) => {
  const hash = createHash('sha256')
  for (const chunk of chunks) hash.update(chunk)
  return hash.digest('base64url')
}

/**
 * An item's content as JSON with attachment bytes replaced by their digest (JSON would spell a
 * Uint8Array out byte by byte). `this[key]` is the value before toJSON, so a Buffer is caught too.
 */
function contentDigest(item: ContentItem): string {
  // Provider options steer the vendor (Anthropic's cache breakpoints), they are not content: a
  // marked copy of an item repeats the unmarked one.
  const { providerOptions: _steering, ...content } = item
  const json = JSON.stringify(content, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key]
    return raw instanceof Uint8Array ? { bytes: digest(raw) } : value
  })
  return digest(json)
}

/**
 * Identities already made, by content item. Conversion hands the same immutable items turn after
 * turn (src/providers/convert-to-provider-prompt.ts), so a long chat's items are hashed once, and
 * the same string comes back each turn (comparing two of them is then a pointer check).
 */
const identities = new WeakMap<ContentItem, { digest: string; role: string; startsMessage: boolean; identity: string }>()

function contentIdentity(role: string, startsMessage: boolean, item: ContentItem): string {
  const known = identities.get(item)
  if (known !== undefined && known.role === role && known.startsMessage === startsMessage) return known.identity
  const itemDigest = known?.digest ?? contentDigest(item)
  // The role and the message boundary are part of what was sent, beside the item itself.
  const identity = `${role}${startsMessage ? '>' : '+'}${itemDigest}`
  identities.set(item, { digest: itemDigest, role, startsMessage, identity })
  return identity
}

function identityOf(item: PromptTokenItem): string {
  switch (item.kind) {
    case 'tools':
      // The tools come first in every vendor's prompt: changing them changes everything after.
      return `tools:${digest(JSON.stringify(item.tools))}`
    case 'system':
      return `system:${digest(item.text)}`
    case 'content':
      return contentIdentity(item.role, item.startsMessage, item.item)
    default: {
      const unknown: never = item
      throw new Error(`unknown prompt item ${JSON.stringify(unknown)}`)
    }
  }
}

/**
 * A request's items in the order a vendor's prefix cache reads them: the tools block, the system
 * message, then each content item of each message. Their tokens sum to estimatePromptTokens.
 */
export function prefixItems(prompt: LanguageModelV4Prompt, tools: readonly LanguageModelV4FunctionTool[] = []): PrefixItem[] {
  const items: PrefixItem[] = []
  for (const item of promptTokenItems(prompt, tools)) items.push({ identity: identityOf(item), tokens: item.tokens })
  return items
}

export type SandboxPrefixCache = {
  /**
   * The tokens of `items` that repeat, from the start, the previous request made with `key`, and
   * remembers `items` as that key's previous request. Without a key: 0, and nothing remembered.
   */
  measure(key: string | undefined, items: readonly PrefixItem[]): number
  /** How many keys are remembered (for tests of the bound). */
  readonly size: number
}

export type SandboxPrefixCacheLimits = {
  /** Keys (chats) remembered; the least recently used goes first. */
  maxKeys: number
  /** Items remembered over all keys, so a few huge chats cannot hold unbounded memory either. */
  maxItems: number
}

const DEFAULT_LIMITS: SandboxPrefixCacheLimits = { maxKeys: 10_000, maxItems: 2_000_000 }

/**
 * The sandbox's simulation of a vendor's prompt cache (docs/guide/sandbox.md): per key (the chat), the
 * previous request's item identities. Only identities are kept: equal identity means equal content,
 * so the cached tokens are counted on the new request's items.
 */
export function createSandboxPrefixCache(limits: SandboxPrefixCacheLimits = DEFAULT_LIMITS): SandboxPrefixCache {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const previous = new Map<string, readonly string[]>()
  let held = 0

  const forget = (key: string) => {
    const entry = previous.get(key)
    if (entry === undefined) return
    held -= entry.length
    previous.delete(key)
  }

  return {
    measure(key, items) {
      if (key === undefined) return 0
      const before = previous.get(key) ?? []
      let cached = 0
      for (let i = 0; i < items.length && i < before.length && items[i]!.identity === before[i]; i++) cached = saturatingAdd(cached, items[i]!.tokens)

      forget(key)
      // A request larger than the whole bound is not remembered: the next one starts cold.
      if (items.length <= limits.maxItems) {
        previous.set(key, items.map((item) => item.identity))
        held += items.length
        for (const oldest of previous.keys()) {
          if (previous.size <= limits.maxKeys && held <= limits.maxItems) break
          forget(oldest)
        }
      }
      return cached
    },
    get size() {
      return previous.size
    },
  }
}
