import { describe, expect, it } from 'vitest'
import {
  activeProviders,
  keyVariableNotes,
  keyVariablesOf,
  VENDOR_KEY_ALIASES,
  VENDOR_KEY_VARIABLES,
  vendorKey,
  vendorKeyVariable,
} from '../../../src/providers/catalogue/active-providers.ts'
import { readSettings } from '../../../src/settings.ts'

/** decisions §1: a vendor's models are active when its key variable is set; the sandbox when SANDBOX=on. */
const activeFor = (env: NodeJS.ProcessEnv) => [...activeProviders(env, readSettings(env).sandbox)].sort()

describe('activeProviders', () => {
  it('names the key variable of each of the six vendors, GOOGLE_GENERATIVE_AI_API_KEY for google', () => {
    expect(VENDOR_KEY_VARIABLES).toEqual({
      anthropic: 'ANTHROPIC_API_KEY',
      openai: 'OPENAI_API_KEY',
      google: 'GOOGLE_GENERATIVE_AI_API_KEY',
      mistral: 'MISTRAL_API_KEY',
      xai: 'XAI_API_KEY',
      deepseek: 'DEEPSEEK_API_KEY',
    })
  })

  it('activates each vendor by its own key only', () => {
    for (const [vendor, variable] of Object.entries(VENDOR_KEY_VARIABLES)) {
      expect([...activeProviders({ [variable]: 'secret' }, false)], vendor).toEqual([vendor])
    }
  })

  it("activates google from GOOGLE_API_KEY or GEMINI_API_KEY, the Gemini API's own names (decision 060)", () => {
    expect([...activeProviders({ GOOGLE_API_KEY: 'secret' }, false)]).toEqual(['google'])
    expect([...activeProviders({ GEMINI_API_KEY: 'secret' }, false)]).toEqual(['google'])
    expect([...activeProviders({ GOOGLE_GENERATIVE_AI_API_KEY: 'secret' }, false)]).toEqual(['google'])
    expect(VENDOR_KEY_ALIASES).toEqual({ google: ['GOOGLE_API_KEY', 'GEMINI_API_KEY'] })
  })

  it("reads google's key from its own variable first, then GOOGLE_API_KEY, then GEMINI_API_KEY; an empty one counts as unset", () => {
    const all = { GOOGLE_GENERATIVE_AI_API_KEY: 'own', GOOGLE_API_KEY: 'google', GEMINI_API_KEY: 'gemini' }
    expect(vendorKeyVariable(all, 'google')).toBe('GOOGLE_GENERATIVE_AI_API_KEY')
    expect(vendorKey(all, 'google')).toBe('own')
    expect(vendorKey({ GOOGLE_API_KEY: 'google', GEMINI_API_KEY: 'gemini' }, 'google')).toBe('google')
    expect(vendorKey({ GEMINI_API_KEY: 'gemini' }, 'google')).toBe('gemini')
    expect(vendorKey({ GOOGLE_GENERATIVE_AI_API_KEY: '', GEMINI_API_KEY: 'gemini' }, 'google')).toBe('gemini')
    expect(vendorKeyVariable({}, 'google')).toBeNull()
  })

  it('reads no alias for the other vendors, and never ANTHROPIC_AUTH_TOKEN', () => {
    expect([...activeProviders({ ANTHROPIC_AUTH_TOKEN: 'token', GROK_API_KEY: 'x', CLAUDE_API_KEY: 'c' }, false)]).toEqual([])
    for (const provider of ['anthropic', 'openai', 'mistral', 'xai', 'deepseek']) expect(keyVariablesOf(provider), provider).toEqual([VENDOR_KEY_VARIABLES[provider]])
  })

  it('a base URL alone activates nothing', () => {
    expect([...activeProviders({ OPENAI_BASE_URL: 'http://localhost:1' }, false)]).toEqual([])
  })

  it('activates nothing with no keys and the sandbox off', () => {
    expect(activeFor({ SANDBOX: 'off' })).toEqual([])
  })

  it('adds the sandbox when SANDBOX=on, even in production', () => {
    expect(activeFor({ SANDBOX: 'on' })).toEqual(['sandbox'])
    expect(activeFor({ SANDBOX: 'on', NODE_ENV: 'production' })).toEqual(['sandbox'])
  })

  it('defaults the sandbox on outside production and off in production', () => {
    expect(activeFor({})).toEqual(['sandbox'])
    expect(activeFor({ NODE_ENV: 'development' })).toEqual(['sandbox'])
    expect(activeFor({ NODE_ENV: 'production' })).toEqual([])
  })

  it('combines vendors and sandbox', () => {
    expect(activeFor({ ANTHROPIC_API_KEY: 'a', XAI_API_KEY: 'x', GOOGLE_GENERATIVE_AI_API_KEY: 'g', SANDBOX: 'on' })).toEqual([
      'anthropic',
      'google',
      'sandbox',
      'xai',
    ])
  })
})

describe('keyVariableNotes (decision 060)', () => {
  it('says nothing for keys set under their own names, or for no key', () => {
    expect(keyVariableNotes({})).toEqual([])
    expect(keyVariableNotes(Object.fromEntries(Object.values(VENDOR_KEY_VARIABLES).map((v) => [v, 'k'])))).toEqual([])
  })

  it('names the alias a key was read from, as info', () => {
    expect(keyVariableNotes({ GOOGLE_API_KEY: 'secret' })).toEqual([
      { level: 'info', fields: { provider: 'google', variable: 'GOOGLE_API_KEY' }, message: 'google: key read from GOOGLE_API_KEY, an alias of GOOGLE_GENERATIVE_AI_API_KEY' },
    ])
  })

  it('warns of an alias set to another value that is not read, and not of one set to the same value', () => {
    expect(keyVariableNotes({ GOOGLE_GENERATIVE_AI_API_KEY: 'own', GEMINI_API_KEY: 'other' })).toEqual([
      {
        level: 'warn',
        fields: { provider: 'google', variable: 'GEMINI_API_KEY' },
        message: "GEMINI_API_KEY is ignored: google's key is read from GOOGLE_GENERATIVE_AI_API_KEY, which is set too, to another value",
      },
    ])
    expect(keyVariableNotes({ GOOGLE_GENERATIVE_AI_API_KEY: 'same', GOOGLE_API_KEY: 'same' })).toEqual([])
  })

  it('warns that ANTHROPIC_AUTH_TOKEN is not read while anthropic stays off, and says nothing once ANTHROPIC_API_KEY is set', () => {
    const [note, ...rest] = keyVariableNotes({ ANTHROPIC_AUTH_TOKEN: 'token' })
    expect(rest).toEqual([])
    expect(note).toMatchObject({ level: 'warn', fields: { provider: 'anthropic', variable: 'ANTHROPIC_AUTH_TOKEN' } })
    expect(note!.message).toMatch(/^ANTHROPIC_AUTH_TOKEN is set but not read .*ANTHROPIC_API_KEY/)
    expect(keyVariableNotes({ ANTHROPIC_AUTH_TOKEN: 'token', ANTHROPIC_API_KEY: 'key' })).toEqual([])
  })

  it('never carries a value', () => {
    const notes = keyVariableNotes({ GEMINI_API_KEY: 'AIza-secret-1', GOOGLE_API_KEY: 'AIza-secret-2', ANTHROPIC_AUTH_TOKEN: 'tok-secret' })
    expect(notes.length).toBeGreaterThan(0)
    expect(JSON.stringify(notes)).not.toMatch(/secret/)
  })
})
