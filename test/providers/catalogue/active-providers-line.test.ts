import { describe, expect, it } from 'vitest'
import { activeModels, activeProvidersLine, NO_MODEL_WARNING } from '../../../src/providers/catalogue/active-providers-line.ts'
import { VENDOR_KEY_VARIABLES } from '../../../src/providers/catalogue/active-providers.ts'

/** Issue 23: the start-up line names what a node serves, and warns when it serves nothing (decision 035). */
const entries = (...providers: string[]) => providers.map((provider) => ({ provider }))

describe('activeModels', () => {
  it('counts the models of each provider, in catalogue order', () => {
    const active = activeModels(entries('openai', 'openai', 'sandbox', 'sandbox', 'sandbox', 'mistral'))
    expect(active).toEqual({ providers: { openai: 2, sandbox: 3, mistral: 1 }, models: 6, warnings: [] })
    expect(Object.keys(active.providers)).toEqual(['openai', 'sandbox', 'mistral'])
  })

  it('warns when no model is active', () => {
    expect(activeModels([])).toEqual({ providers: {}, models: 0, warnings: [NO_MODEL_WARNING] })
  })

  it("the warning says what a caller sees and names every vendor's key variable and the guide page", () => {
    expect(NO_MODEL_WARNING).toContain('/v1/catalogue is empty')
    expect(NO_MODEL_WARNING).toContain('422')
    expect(NO_MODEL_WARNING).toContain('SANDBOX=on')
    expect(NO_MODEL_WARNING).toContain('docs/guide/vendors.md')
    for (const variable of Object.values(VENDOR_KEY_VARIABLES)) expect(NO_MODEL_WARNING).toContain(variable)
  })
})

describe('activeProvidersLine', () => {
  it('is an info line naming each provider with its number of models', () => {
    expect(activeProvidersLine(activeModels(entries('openai', 'openai', 'deepseek')))).toEqual({
      level: 'info',
      fields: { providers: { openai: 2, deepseek: 1 }, models: 3 },
      message: 'providers active: openai (2 models), deepseek (1 model)',
    })
  })

  it('is a warning with empty counts when no model is active', () => {
    expect(activeProvidersLine(activeModels([]))).toEqual({
      level: 'warn',
      fields: { providers: {}, models: 0 },
      message: NO_MODEL_WARNING,
    })
  })
})
