import { describe, expect, it } from 'vitest'
import { activeProviders, VENDOR_KEY_VARIABLES } from '../../../src/providers/catalogue/active-providers.ts'
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

  it('does not activate google from GOOGLE_API_KEY', () => {
    expect([...activeProviders({ GOOGLE_API_KEY: 'secret' }, false)]).toEqual([])
    expect([...activeProviders({ GOOGLE_GENERATIVE_AI_API_KEY: 'secret' }, false)]).toEqual(['google'])
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
