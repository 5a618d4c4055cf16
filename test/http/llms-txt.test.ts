import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readSandboxScript } from '../../src/providers/sandbox/sandbox-script.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { fundedOrg, newChat, prompt, sandboxCatalogue, turn } from '../helpers/turns.ts'

let ctx: TestContext
let llms: string

beforeEach(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  const res = await ctx.app.inject({ url: '/llms.txt' })
  expect(res.statusCode).toBe(200)
  llms = res.body
})
afterEach(async () => {
  await ctx.close()
})

/** The text of one `## ` section of llms.txt. */
function section(title: string): string {
  const start = llms.indexOf(`\n## ${title}\n`)
  expect(start, `llms.txt has a section "${title}"`).toBeGreaterThanOrEqual(0)
  const end = llms.indexOf('\n## ', start + 1)
  return llms.slice(start, end === -1 ? undefined : end)
}

describe('llms.txt: the stream', () => {
  it('names every event a real turn sends, in the order the turn sends them', async () => {
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const streamed = await turn(ctx, org.auth, chatId, {
      model: 'sandbox/echo',
      input: [prompt('/think first\nsome text\n/tool lookup {"order":42}')],
    })
    const failed = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/fail-mid\none two three four')] })
    const events = [...new Set([...streamed.events, ...failed.events])]
    expect(events).toEqual(['run', 'config_warnings', 'translation_warnings', 'block_start', 'delta', 'block_stop', 'done', 'error'])

    const text = section('A turn')
    const firstMention = (event: string) => text.indexOf(`\`${event}\``)
    for (const event of [...events, 'compacting']) expect(firstMention(event), event).toBeGreaterThan(0)
    const inStreamOrder = streamed.events.filter((event, i, all) => all.indexOf(event) === i)
    expect([...inStreamOrder].sort((a, b) => firstMention(a) - firstMention(b))).toEqual(inStreamOrder)
  })

  it('lists the error codes a stream can end with, including the one a real mid-stream failure sends', async () => {
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const failed = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('/fail-mid\none two three four')] })
    const code = failed.of('error')[0]!.data.code as string
    expect(code).toBe('upstream_error')
    for (const streamCode of [code, 'cancelled', 'chat_deleted', 'compaction_failed', 'unavailable', 'internal']) {
      expect(section('A turn')).toContain(`\`${streamCode}\``)
    }
  })
})

describe('llms.txt: the sandbox', () => {
  it('names every sandbox model of the catalogue', () => {
    const models = sandboxCatalogue().map((entry) => entry.name)
    expect(models.length).toBeGreaterThanOrEqual(3)
    for (const name of models) expect(section('The sandbox')).toContain(`\`${name}\``)
  })

  it('lists every control line, and each turn line it lists is one the sandbox acts on', () => {
    const lines = [...section('The sandbox').matchAll(/^- `(\/[a-z-]+)/gm)].map((m) => m[1]!)
    expect(lines).toEqual(['/think', '/tool', '/long', '/slow', '/refuse', '/fail', '/flaky', '/fail-mid', '/context', '/fail-summary'])
    const arguments_: Record<string, string> = { '/think': ' TEXT', '/tool': ' lookup {"q":1}', '/long': ' 5', '/slow': ' 10' }
    // /fail-summary steers compaction runs, not a turn's answer (src/providers/sandbox/sandbox-summary.ts).
    for (const line of lines.filter((l) => l !== '/fail-summary')) {
      expect(readSandboxScript(`${line}${arguments_[line] ?? ''}`).text, `${line} is read as a control line`).toBe('')
    }
  })

  it('points at the guide in the repository', () => {
    expect(section('Documents')).toContain('docs/guide/')
    expect(section('Documents')).toContain('turn-stream.md')
    expect(section('Documents')).toContain('sandbox.md')
  })
})
