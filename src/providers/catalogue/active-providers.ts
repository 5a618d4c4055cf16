/** The environment variable whose presence activates each vendor's models (docs/guide/vendors.md). */
export const VENDOR_KEY_VARIABLES: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
}

/**
 * Other names a vendor's key is set under by its own documentation, read when the vendor's
 * variable is unset, in this order (docs/decisions/060-a-first-run-that-explains-itself.md).
 * Google's Gemini API libraries read `GOOGLE_API_KEY`, then `GEMINI_API_KEY`; the AI SDK reads
 * only `GOOGLE_GENERATIVE_AI_API_KEY`. The other five vendors document one name, the AI SDK's.
 */
export const VENDOR_KEY_ALIASES: Record<string, readonly string[]> = {
  google: ['GOOGLE_API_KEY', 'GEMINI_API_KEY'],
}

/**
 * Variables a vendor's own tools read that Parley does not, because they hold another kind of
 * credential (decision 060): set without the vendor's key variable, the start-up log says that
 * they are ignored, rather than the vendor staying off without a word.
 */
export const IGNORED_KEY_VARIABLES: Record<string, { provider: string; what: string }> = {
  // Anthropic's SDKs and Claude Code send it as `Authorization: Bearer` (a gateway's or an OAuth
  // token), not as the API key Parley sends in `x-api-key`.
  ANTHROPIC_AUTH_TOKEN: { provider: 'anthropic', what: 'a bearer token for a gateway, not an API key' },
}

/** The variables a vendor's key may be read from, its own first. */
export const keyVariablesOf = (provider: string): string[] => {
  const own = VENDOR_KEY_VARIABLES[provider]
  return own === undefined ? [] : [own, ...(VENDOR_KEY_ALIASES[provider] ?? [])]
}

/** The variable a vendor's key is read from in `env`: its own when set, else the first alias set; null when none is. */
export function vendorKeyVariable(env: NodeJS.ProcessEnv, provider: string): string | null {
  return keyVariablesOf(provider).find((variable) => env[variable]) ?? null
}

/** A vendor's key as the server sends it; undefined when no variable of it is set. */
export function vendorKey(env: NodeJS.ProcessEnv, provider: string): string | undefined {
  const variable = vendorKeyVariable(env, provider)
  return variable === null ? undefined : env[variable]
}

/** The variable naming a vendor's endpoint in place of its default: `GOOGLE_BASE_URL` for google, whose key variable differs. */
export const baseUrlVariable = (provider: string): string => `${provider.toUpperCase()}_BASE_URL`

/** Providers whose models are active: vendors with a key set (under its own name or an alias), and the sandbox when it is on. */
export function activeProviders(env: NodeJS.ProcessEnv, sandbox: boolean): Set<string> {
  const active = new Set(Object.keys(VENDOR_KEY_VARIABLES).filter((provider) => vendorKeyVariable(env, provider) !== null))
  if (sandbox) active.add('sandbox')
  return active
}

export type KeyVariableNote = { level: 'info' | 'warn'; fields: { provider: string; variable: string }; message: string }

/**
 * What the start-up log says about the key variables beyond which providers are active (decision
 * 060): a key read from an alias (info), an alias whose different value is not read because a
 * variable before it is set (warn), and a variable set that is never read while its vendor stays
 * off (warn). Nothing for a vendor set the usual way. No value is ever part of a note.
 */
export function keyVariableNotes(env: NodeJS.ProcessEnv): KeyVariableNote[] {
  const notes: KeyVariableNote[] = []
  for (const provider of Object.keys(VENDOR_KEY_VARIABLES)) {
    const own = VENDOR_KEY_VARIABLES[provider]!
    const used = vendorKeyVariable(env, provider)
    if (used === null) continue
    if (used !== own) notes.push({ level: 'info', fields: { provider, variable: used }, message: `${provider}: key read from ${used}, an alias of ${own}` })
    for (const other of keyVariablesOf(provider)) {
      if (other === used || !env[other] || env[other] === env[used]) continue
      notes.push({ level: 'warn', fields: { provider, variable: other }, message: `${other} is ignored: ${provider}'s key is read from ${used}, which is set too, to another value` })
    }
  }
  for (const [variable, { provider, what }] of Object.entries(IGNORED_KEY_VARIABLES)) {
    if (!env[variable] || vendorKeyVariable(env, provider) !== null) continue
    const own = VENDOR_KEY_VARIABLES[provider]!
    notes.push({ level: 'warn', fields: { provider, variable }, message: `${variable} is set but not read (${what}): ${provider}'s models stay off until ${own} is set` })
  }
  return notes
}
