/** The environment variable whose presence activates each vendor's models (README.md). */
export const VENDOR_KEY_VARIABLES: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
}

/** Providers whose models are active: vendors with a key set, and the sandbox when it is on. */
export function activeProviders(env: NodeJS.ProcessEnv, sandbox: boolean): Set<string> {
  const active = new Set(Object.entries(VENDOR_KEY_VARIABLES).filter(([, variable]) => env[variable]).map(([p]) => p))
  if (sandbox) active.add('sandbox')
  return active
}
