import { describe, expect, it } from 'vitest'
import { jsonMismatches, parseFrames, streamMismatches } from './match-answer.ts'
import { runnableExamples } from './runnable-blocks.ts'

describe('an answer shown on a page', () => {
  it('matches JSON by the fields it shows, placeholders standing for any value', () => {
    expect(jsonMismatches({ a: 1, b: '<id>' }, { a: 1, b: 'x', c: 3 })).toEqual([])
    expect(jsonMismatches({ a: 1 }, { a: 2 })).toEqual(['/a: expected 1, got 2'])
    expect(jsonMismatches({ b: '<id>' }, {})).toEqual(['/b: missing (the page shows <id>)'])
    expect(jsonMismatches([1, 2], [1])).toHaveLength(1)
    expect(jsonMismatches({ a: null }, { a: 0 })).toHaveLength(1)
  })

  it('matches a stream frame by frame, `…` standing for any frames', () => {
    const frames = parseFrames('event: run\ndata: {"run_id":"r"}\n\n: heartbeat\n\nevent: delta\ndata: {"text":"a"}\n\nevent: delta\ndata: {"text":"b"}\n\nevent: done\ndata: {"stop_reason":"end_turn"}\n\n')
    expect(frames.map((f) => f.event)).toEqual(['run', 'delta', 'delta', 'done'])
    expect(streamMismatches('event: run {"run_id":"<id>"}\n…\nevent: done {"stop_reason":"end_turn"}', frames)).toEqual([])
    expect(streamMismatches('event: run\nevent: delta\nevent: done', frames)).toHaveLength(1)
    expect(streamMismatches('event: run\n…\nevent: done {"stop_reason":"tool_use"}', frames)).toHaveLength(1)
    expect(streamMismatches('…\nevent: delta {"text":"b"}\nevent: done', frames)).toEqual([])
  })

  it('is read from the fence after a runnable example, with its status', () => {
    const page = ['```sh runnable', 'curl -s $API/x', '```', '', '```json answer 422', '{"error":{}}', '```', '```sh', 'not run', '```', '```sh runnable', 'true', '```'].join('\n')
    const examples = runnableExamples('p.md', page)
    expect(examples).toEqual([
      { page: 'p.md', line: 1, script: 'curl -s $API/x', answer: { format: 'json', status: 422, body: '{"error":{}}' } },
      { page: 'p.md', line: 11, script: 'true', answer: null },
    ])
  })
})
