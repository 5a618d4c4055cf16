import { describe, expect, it } from 'vitest'
import { ValidationError } from '../../../src/domain/errors.ts'
import { VENDOR_KEY_VARIABLES } from '../../../src/providers/catalogue/active-providers.ts'
import { inactiveModelError, inactiveModelHint, NAMED_ACTIVE_MODELS } from '../../../src/providers/catalogue/inactive-model.ts'

/** Issue 38: a turn naming a model that is not active is told which are, and how a vendor is turned on (decision 060). */
const model = (name: string) => ({ name, provider: name.split('/')[0]! })
const SANDBOX = ['sandbox/echo', 'sandbox/echo-8k', 'sandbox/echo-1m', 'sandbox/agent'].map(model)

describe('inactiveModelHint', () => {
  it('a vendor model whose vendor is off: the active models, and that vendor’s key variable', () => {
    expect(inactiveModelHint('openai/gpt-5', SANDBOX)).toBe(
      'the active models are sandbox/echo, sandbox/echo-8k, sandbox/echo-1m, sandbox/agent; openai is off: its models turn on when the server starts with OPENAI_API_KEY set (see docs/guide/vendors.md)',
    )
    expect(inactiveModelHint('google/gemini-3.8-flash', SANDBOX)).toContain('google is off: its models turn on when the server starts with GOOGLE_GENERATIVE_AI_API_KEY set')
  })

  it('a sandbox model with the sandbox off and nothing active: says so, and how to turn the sandbox on', () => {
    expect(inactiveModelHint('sandbox/echo', [])).toBe(
      'no model is active on this server; the sandbox is off: start the server with SANDBOX=on (the default unless NODE_ENV=production) (see docs/guide/vendors.md)',
    )
  })

  it('a name of no provider, or of an active one: every vendor’s key variable and SANDBOX=on', () => {
    for (const hint of [inactiveModelHint('gpt-5', SANDBOX), inactiveModelHint('sandbox/echo-2', SANDBOX)]) {
      expect(hint).toMatch(/^the active models are sandbox\/echo, /)
      for (const variable of Object.values(VENDOR_KEY_VARIABLES)) expect(hint).toContain(variable)
      expect(hint).toContain('SANDBOX=on')
      expect(hint).toContain('docs/guide/vendors.md')
    }
  })

  it(`names the first ${NAMED_ACTIVE_MODELS} active models and counts the rest`, () => {
    const many = Array.from({ length: NAMED_ACTIVE_MODELS + 3 }, (_, i) => model(`openai/m${i}`))
    const hint = inactiveModelHint('openai/nope', many)
    expect(hint).toMatch(new RegExp(`^the active models are openai/m0, .*openai/m${NAMED_ACTIVE_MODELS - 1} and 3 more \\(GET /v1/catalogue lists them all\\);`))
    expect(hint).not.toContain(`openai/m${NAMED_ACTIVE_MODELS},`)
    expect(hint).not.toContain(`openai/m${NAMED_ACTIVE_MODELS} `)
  })
})

describe('inactiveModelError', () => {
  it('is the 422 validation_failed on /model with the same message as before, and the hint', () => {
    const error = inactiveModelError('sandbox/echo', [])
    expect(error).toBeInstanceOf(ValidationError)
    expect(error.problems).toEqual([{ in: 'body', pointer: '/model', message: '"sandbox/echo" is not an active model of the catalogue' }])
    expect(error.message).toBe('body /model: "sandbox/echo" is not an active model of the catalogue')
    expect(error.hint).toBe(inactiveModelHint('sandbox/echo', []))
  })
})
