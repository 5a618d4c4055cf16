import { describe, expect, it } from 'vitest'
import { BLOCK_SPAN, frameAfter, numberFrames, parseEventId } from '../../../src/domain/runs/run-event-ids.ts'

const stream = [
  { event: 'run', data: {} },
  { event: 'config_warnings', data: { warnings: [] } },
  { event: 'translation_warnings', data: { warnings: [] } },
  { event: 'block_start', data: { kind: 'text' } },
  { event: 'delta', data: { kind: 'text', text: 'Hel' } },
  { event: 'delta', data: { kind: 'text', text: 'lo' } },
  { event: 'block_stop', data: {} },
  { event: 'block_start', data: { kind: 'tool_call' } },
  { event: 'block_stop', data: {} },
  { event: 'done', data: {} },
]

describe('run event ids', () => {
  it('number opening frames 1, 2, 3; a delta by its end offset in its block; later frames independent of block lengths', () => {
    expect(numberFrames(stream).map((f) => f.seq)).toEqual([1, 2, 3, BLOCK_SPAN, BLOCK_SPAN + 3, BLOCK_SPAN + 5, 2 * BLOCK_SPAN - 1, 2 * BLOCK_SPAN, 3 * BLOCK_SPAN - 1, 4 * BLOCK_SPAN - 1])
    // An extra opening frame (compacting) moves nothing after it.
    const withCompacting = numberFrames([...stream.slice(0, 3), { event: 'compacting', data: {} }, ...stream.slice(3)])
    expect(withCompacting.at(-1)!.seq).toBe(4 * BLOCK_SPAN - 1)
  })

  it('a block rebuilt as one delta numbers the same and resumes from the offset a live id names', () => {
    const live = numberFrames(stream)
    const rebuilt = numberFrames([...stream.slice(0, 4), { event: 'delta', data: { kind: 'text', text: 'Hello' } }, ...stream.slice(6)])
    expect(rebuilt.filter((f) => f.event !== 'delta').map((f) => f.seq)).toEqual(live.filter((f) => f.event !== 'delta').map((f) => f.seq))
    const afterHel = live[4]!.seq
    const rest = rebuilt.map((f) => frameAfter(f, afterHel)).filter((f) => f !== null)
    expect(rest.map((f) => [f.event, f.data])).toEqual([
      ['delta', { kind: 'text', text: 'lo' }],
      ['block_stop', {}],
      ['block_start', { kind: 'tool_call' }],
      ['block_stop', {}],
      ['done', {}],
    ])
    expect(rebuilt.map((f) => frameAfter(f, rebuilt.at(-1)!.seq)).filter((f) => f !== null)).toEqual([])
  })

  it('parses only ids of the run: malformed or another run is an error', () => {
    expect(parseEventId('r1', 'r1:10000000003')).toEqual({ ok: true, seq: 10000000003 })
    expect(parseEventId('r1', 'r2:3').ok).toBe(false)
    expect(parseEventId('r1', 'r1:-1').ok).toBe(false)
    expect(parseEventId('r1', 'r1:1e3').ok).toBe(false)
    expect(parseEventId('r1', '17').ok).toBe(false)
    expect(parseEventId('r1', 'r1:99999999999999999999').ok).toBe(false)
  })
})
