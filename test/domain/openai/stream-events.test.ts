import { describe, expect, it } from 'vitest'
import { compactionItem } from '../../../src/domain/openai/compaction-item.ts'
import { compactionIdOf, outputItemIdOf } from '../../../src/domain/openai/openai-ids.ts'
import type { ResponseObject } from '../../../src/domain/openai/response-object.ts'
import { createEventTranslator } from '../../../src/domain/openai/stream-events.ts'

/**
 * A turn's frames as the Responses event sequence (decision 055), and a turn that summarised history
 * answering with its `compaction` item first (decision 058).
 */
const RUN = '01a226bd-cc6c-72a7-b750-411811237a28'
const frames = (...names: [string, unknown][]) => names.map(([event, data]) => ({ event, data }))
const completed = { status: 'completed' } as ResponseObject
const ITEM = compactionItem(compactionIdOf(RUN), 'Summary of ordinals 1-4: hello', [{ role: 'user', text: 'next question' }])

describe('createEventTranslator', () => {
  it('a text block: the item added, its deltas, then done, at output_index 0 under msg_<run>_0', () => {
    const t = createEventTranslator(RUN)
    const events = frames(['block_start', { kind: 'text' }], ['delta', { text: 'Hi' }], ['block_stop', {}]).flatMap((f) => t.frame(f))
    expect(events.map((e) => e.type)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ])
    expect(events[0]).toMatchObject({ output_index: 0, item: { id: outputItemIdOf('msg', RUN, 0) } })
    expect(t.terminal(completed).map((e) => e.type)).toEqual(['response.completed'])
  })

  it('after `compacting`, the compaction item comes first (output_index 0), whole, before the first block; the answer keeps its id', () => {
    let asked = 0
    const t = createEventTranslator(RUN, {
      compactionItem: () => {
        asked++
        return ITEM
      },
    })
    const events = frames(['compacting', { blocks: 2, in_progress_elsewhere: 0 }], ['block_start', { kind: 'text' }], ['delta', { text: 'Hi' }], ['block_stop', {}], [
      'block_start',
      { kind: 'text' },
    ], ['block_stop', {}]).flatMap((f) => t.frame(f))
    expect(events.slice(0, 2)).toMatchObject([
      { type: 'response.output_item.added', output_index: 0, item: ITEM },
      { type: 'response.output_item.done', output_index: 0, item: ITEM },
    ])
    const added = events.filter((e) => e.type === 'response.output_item.added').slice(1)
    expect(added).toMatchObject([
      { output_index: 1, item: { id: outputItemIdOf('msg', RUN, 0) } },
      { output_index: 2, item: { id: outputItemIdOf('msg', RUN, 1) } },
    ])
    expect(asked).toBe(1)
    expect(t.terminal(completed).map((e) => e.type)).toEqual(['response.completed'])
  })

  it('a turn that summarised and then answered nothing sends its compaction item before the terminal event', () => {
    const t = createEventTranslator(RUN, { compactionItem: () => ITEM })
    expect(t.frame({ event: 'compacting', data: { blocks: 1, in_progress_elsewhere: 0 } })).toEqual([])
    expect(t.terminal({ status: 'failed' } as ResponseObject).map((e) => [e.type, e.output_index])).toEqual([
      ['response.output_item.added', 0],
      ['response.output_item.done', 0],
      ['response.failed', undefined],
    ])
  })

  it('without `compacting` no compaction item is asked for; when the ledger has none, nothing is sent and the blocks start at 0', () => {
    let asked = 0
    const quiet = createEventTranslator(RUN, {
      compactionItem: () => {
        asked++
        return ITEM
      },
    })
    quiet.frame({ event: 'block_start', data: { kind: 'text' } })
    expect(asked).toBe(0)
    const none = createEventTranslator(RUN, { compactionItem: () => null })
    none.frame({ event: 'compacting', data: { blocks: 0, in_progress_elsewhere: 1 } })
    expect(none.frame({ event: 'block_start', data: { kind: 'reasoning' } })[0]).toMatchObject({ output_index: 0, item: { id: outputItemIdOf('rs', RUN, 0) } })
  })
})
