/** The environment variable whose presence activates each vendor's models (docs/guide/vendors.md). */
export const VENDOR_KEY_VARIABLES: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
}

/** The variable naming a vendor's endpoint in place of its default: `GOOGLE_BASE_URL` for google, whose key variable differs. */
export const baseUrlVariable = (provider: string): string => `${provider.toUpperCase()}_BASE_URL`

/** Providers whose models are active: vendors with a key set, and the sandbox when it is on. */
export function activeProviders(env: NodeJS.ProcessEnv, sandbox: boolean): Set<string> {
  const active = new Set(Object.entries(VENDOR_KEY_VARIABLES).filter(([, variable]) => env[variable]).map(([p]) => p))
  if (sandbox) active.add('sandbox')
  return active
}
