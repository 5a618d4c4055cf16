import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { inProcessVendorEnv } from './vendor-server.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { createLanguageModels } from '../../src/providers/language-models.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, postTurn, prompt, streamOf } from '../helpers/turns.ts'
import { VENDOR_MODELS } from '../helpers/vendor-cases.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { startReplayServer, type ReplayServer } from './vendor-replay-server.ts'

/**
 * Per-turn options on the wire (issue 35, docs/guide/turn-options.md): a turn's `instructions`,
 * `temperature`, `tool_choice` and `response_format`, through the real app to each vendor's
 * loopback replay double (the vendor-replay-server test double), read back from the request the
 * vendor would have received. Each vendor's package (`@ai-sdk/<vendor>`) writes its own wire; what
 * a vendor cannot take reaches the run's manifest as the package's warning, never silence.
 */
const WEATHER = { name: 'get_weather', description: 'Current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }
const ANSWER = { type: 'object', properties: { city: { type: 'string' }, sunny: { type: 'boolean' } }, required: ['city', 'sunny'], additionalProperties: false }
const INSTRUCTION = 'Answer in one short sentence.'

type Body = Record<string, any>
/** Where each wire carries the system instruction, the temperature, the forced tool and the JSON schema. */
const WIRE: Record<Vendor, { system: (b: Body) => unknown; temperature: (b: Body) => unknown; forcedTool: (b: Body) => unknown; schema: (b: Body) => unknown }> = {
  anthropic: {
    system: (b) => b.system.map((s: { text: string }) => s.text).join('\n'),
    temperature: (b) => b.temperature,
    forcedTool: (b) => b.tool_choice,
    schema: (b) => b.output_config?.format,
  },
  openai: {
    system: (b) => b.input.find((m: { role: string }) => m.role === 'developer' || m.role === 'system')?.content,
    temperature: (b) => b.temperature,
    forcedTool: (b) => b.tool_choice,
    schema: (b) => b.text?.format,
  },
  google: {
    system: (b) => b.systemInstruction.parts.map((p: { text: string }) => p.text).join('\n'),
    temperature: (b) => b.generationConfig.temperature,
    forcedTool: (b) => b.toolConfig?.functionCallingConfig,
    schema: (b) => ({ mime: b.generationConfig.responseMimeType, schema: b.generationConfig.responseJsonSchema }),
  },
  mistral: {
    system: (b) => b.messages.find((m: { role: string }) => m.role === 'system')?.content,
    temperature: (b) => b.temperature,
    forcedTool: (b) => b.tool_choice,
    schema: (b) => b.response_format,
  },
  xai: {
    system: (b) => b.input.find((m: { role: string }) => m.role === 'system')?.content,
    temperature: (b) => b.temperature,
    forcedTool: (b) => b.tool_choice,
    schema: (b) => b.text?.format,
  },
  deepseek: {
    system: (b) => b.messages.find((m: { role: string }) => m.role === 'system')?.content,
    temperature: (b) => b.temperature,
    forcedTool: (b) => b.tool_choice,
    schema: (b) => b.response_format,
  },
}

/** What each vendor is sent, or (where it cannot take it) which warning the manifest names instead. */
const EXPECTED: Record<Vendor, { temperature: number | { warns: RegExp }; forcedTool: unknown; schema: unknown | { warns: RegExp } }> = {
  anthropic: { temperature: 0.3, forcedTool: { type: 'tool', name: 'get_weather' }, schema: { type: 'json_schema', schema: ANSWER } },
  // gpt-5 is a reasoning model: OpenAI takes no temperature for it.
  openai: { temperature: { warns: /temperature is not supported for reasoning models/ }, forcedTool: { type: 'function', name: 'get_weather' }, schema: { type: 'json_schema', strict: true, name: 'weather', schema: ANSWER } },
  google: { temperature: 0.3, forcedTool: { mode: 'ANY', allowedFunctionNames: ['get_weather'] }, schema: { mime: 'application/json', schema: ANSWER } },
  mistral: { temperature: 0.3, forcedTool: { type: 'function', function: { name: 'get_weather' } }, schema: { type: 'json_schema', json_schema: { schema: ANSWER, strict: false, name: 'weather' } } },
  xai: { temperature: 0.3, forcedTool: { type: 'function', name: 'get_weather' }, schema: { type: 'json_schema', strict: true, name: 'weather', schema: ANSWER } },
  // DeepSeek thinks by default, and its JSON mode takes no schema: the package puts the schema in the system message.
  deepseek: { temperature: { warns: /temperature has no effect when DeepSeek thinking is enabled/ }, forcedTool: { type: 'function', function: { name: 'get_weather' } }, schema: { warns: /JSON response schema is injected into the system message/ } },
}

describe('per-turn options reach each vendor as its wire carries them', () => {
  let replay: ReplayServer
  let ctx: TestContext
  let org: TestOrg
  beforeAll(async () => {
    replay = await startReplayServer()
    ctx = await createTestApp({ catalogue: loadCatalogue().entries, languageModelFor: createLanguageModels(inProcessVendorEnv(replay)) })
    org = fundedOrg(ctx, '100')
  })
  afterAll(async () => {
    await ctx?.close()
    await replay?.close()
  })

  const sent = async (vendor: Vendor, body: Record<string, unknown>) => {
    const chatId = await newChat(ctx, org.auth)
    const res = await postTurn(ctx, org.auth, chatId, { model: VENDOR_MODELS[vendor], input: [prompt('Weather in Oslo?')], ...body })
    const turn = streamOf(res)
    expect(turn.events.at(-1)).toBe('done')
    const manifest = (await getRun(ctx, org.auth, turn.runId)).manifest
    return { wire: replay.requestsTo(vendor).at(-1)!.body as Body, warnings: JSON.stringify(manifest.warnings.translation), manifest }
  }

  for (const vendor of Object.keys(VENDOR_MODELS) as Vendor[]) {
    test(`${vendor}: instructions, temperature and a named tool_choice; then a json_schema response_format`, async () => {
      const wire = WIRE[vendor]
      const expected = EXPECTED[vendor]
      const first = await sent(vendor, { tools: [WEATHER], temperature: 0.3, tool_choice: { type: 'tool', name: 'get_weather' }, instructions: INSTRUCTION })
      expect(wire.system(first.wire)).toContain(INSTRUCTION)
      if (typeof expected.temperature === 'number') expect(wire.temperature(first.wire)).toBe(expected.temperature)
      else {
        expect(wire.temperature(first.wire)).toBeUndefined()
        expect(first.warnings).toMatch(expected.temperature.warns)
      }
      expect(wire.forcedTool(first.wire)).toEqual(expected.forcedTool)
      expect(first.manifest.call_settings).toMatchObject({ temperature: 0.3, toolChoice: { type: 'tool', toolName: 'get_weather' } })

      const second = await sent(vendor, { response_format: { type: 'json_schema', name: 'weather', schema: ANSWER } })
      if (expected.schema !== null && typeof expected.schema === 'object' && 'warns' in expected.schema) {
        expect(second.warnings).toMatch((expected.schema as { warns: RegExp }).warns)
        // JSON mode without a schema on the wire; the schema in the system message instead.
        expect(second.wire.response_format).toEqual({ type: 'json_object' })
        expect(String(wire.system(second.wire))).toContain(JSON.stringify(ANSWER.properties))
      } else expect(wire.schema(second.wire)).toEqual(expected.schema)
    })
  }
})
