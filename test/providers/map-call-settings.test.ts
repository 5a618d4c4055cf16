import { describe, expect, it } from 'vitest'
import { mapCallSettings } from '../../src/providers/map-call-settings.ts'
import { turnInstructions, unmetToolChoice } from '../../src/domain/turns/turn-options.ts'

describe('mapCallSettings', () => {
  it('asks nothing of a turn that sets nothing', () => {
    expect(mapCallSettings('openai', {})).toEqual({ value: {}, warnings: [] })
  })
  it("lowers a temperature above Anthropic's 1 to 1, with a warning; other vendors take up to 2", () => {
    const lowered = mapCallSettings('anthropic', { temperature: 1.6 })
    expect(lowered.value.temperature).toBe(1)
    expect(lowered.warnings).toEqual([expect.objectContaining({ code: 'temperature_lowered', details: { requested: 1.6, sent: 1 } })])
    expect(mapCallSettings('anthropic', { temperature: 0.7 })).toEqual({ value: { temperature: 0.7 }, warnings: [] })
    expect(mapCallSettings('google', { temperature: 1.6 })).toEqual({ value: { temperature: 1.6 }, warnings: [] })
  })
  it('sends top_p as the AI SDK topP, unchanged', () => {
    expect(mapCallSettings('openai', { top_p: 0.9 })).toEqual({ value: { topP: 0.9 }, warnings: [] })
  })
  it('maps tool_choice and response_format to the AI SDK call options', () => {
    expect(mapCallSettings('openai', { tool_choice: 'required' }).value.toolChoice).toEqual({ type: 'required' })
    expect(mapCallSettings('openai', { tool_choice: { type: 'tool', name: 'w' } }).value.toolChoice).toEqual({ type: 'tool', toolName: 'w' })
    expect(mapCallSettings('openai', { response_format: { type: 'json_object' } }).value.responseFormat).toEqual({ type: 'json' })
    expect(mapCallSettings('openai', { response_format: { type: 'text' } }).value.responseFormat).toEqual({ type: 'text' })
    const schema = { type: 'object', properties: {} }
    expect(mapCallSettings('openai', { response_format: { type: 'json_schema', name: 'n', schema } }).value.responseFormat).toEqual({ type: 'json', schema, name: 'n' })
  })
})

describe('turn options: instructions and tool_choice', () => {
  it('a turn\'s instruction follows the configured ones after a blank line; either alone is sent as is', () => {
    expect(turnInstructions('Config.', 'Mine.')).toBe('Config.\n\nMine.')
    expect(turnInstructions(null, 'Mine.')).toBe('Mine.')
    expect(turnInstructions('Config.', null)).toBe('Config.')
    expect(turnInstructions('Config.', '')).toBe('Config.')
    expect(turnInstructions(null, undefined)).toBeNull()
  })
  it('tool_choice is unmet when it names a tool not offered, or requires one of none', () => {
    expect(unmetToolChoice({ type: 'tool', name: 'b' }, ['a'])).toEqual({ choice: 'b', offered: ['a'] })
    expect(unmetToolChoice({ type: 'tool', name: 'a' }, ['a'])).toBeNull()
    expect(unmetToolChoice('required', [])).toEqual({ choice: 'required', offered: [] })
    expect(unmetToolChoice('required', ['a'])).toBeNull()
    expect(unmetToolChoice('none', [])).toBeNull()
    expect(unmetToolChoice('auto', [])).toBeNull()
    expect(unmetToolChoice(null, [])).toBeNull()
  })
})
