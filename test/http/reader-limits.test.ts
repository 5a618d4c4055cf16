import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ReaderCapacityError, ReadersLimitError, retryAfterOf } from '../../src/domain/errors.ts'
import { eventReaders, READER_RETRY_AFTER_S } from '../../src/http/sse/event-readers.ts'
import { defaultEventReaders, MAX_EVENT_READERS_CEILING, readOpenFileLimit, readSettings } from '../../src/settings.ts'

/** The bounds on readers of runs' events (docs/decisions/062-bounded-event-readers.md), and their defaults. */
describe('eventReaders', () => {
  it('holds the node, the key and the run bounds; each place comes back once, however often released', () => {
    const readers = eventReaders({ perRun: 2, perKey: 3, perNode: 4 }, () => 0)
    const a = [readers.admitKey('k1'), readers.admitKey('k1'), readers.admitKey('k1')]
    expect(() => readers.admitKey('k1')).toThrow(ReadersLimitError)
    const b = readers.admitKey('k2')
    expect(() => readers.admitKey('k2')).toThrow(ReaderCapacityError)
    expect(readers.open).toBe(4)
    a[0]!()
    a[0]!()
    expect(readers.open).toBe(3)
    expect(() => readers.admitKey('k2')).not.toThrow()
    b()
    const r = [readers.admitRun('run-1'), readers.admitRun('run-1')]
    expect(() => readers.admitRun('run-1')).toThrow(ReadersLimitError)
    expect(() => readers.admitRun('run-2')).not.toThrow()
    r[1]!()
    expect(() => readers.admitRun('run-1')).not.toThrow()
  })

  it('refusals say which bound and when to come back, jittered within the documented spread', () => {
    const low = eventReaders({ perRun: 1, perKey: 1, perNode: 1 }, () => 0)
    const high = eventReaders({ perRun: 1, perKey: 1, perNode: 1 }, () => 0.999)
    low.admitKey('k')
    high.admitKey('k')
    const caught = (f: () => unknown) => {
      try {
        f()
      } catch (error) {
        return error as ReaderCapacityError
      }
      throw new Error('not refused')
    }
    const early = caught(() => low.admitKey('other'))
    const late = caught(() => high.admitKey('other'))
    expect(early.details).toMatchObject({ reason: 'event_readers', limit: 1 })
    expect(retryAfterOf(early)).toBe(READER_RETRY_AFTER_S.base)
    expect(retryAfterOf(late)).toBe(READER_RETRY_AFTER_S.base + READER_RETRY_AFTER_S.spread - 1)
  })
})

describe('the node bound by default', () => {
  it('leaves room for two descriptors per turn in flight and 256 more, within 32 and the ceiling', () => {
    // 5,000 open files, 1,024 turns: 5,000 - 2,048 - 256.
    expect(defaultEventReaders(5000, 1024)).toBe(2696)
    // A small limit: the turns' share is at most a quarter of it each way.
    expect(defaultEventReaders(1024, 1024)).toBe(1024 - 512 - 256)
    expect(defaultEventReaders(100, 1024)).toBe(32)
    expect(defaultEventReaders(10_000_000, 1024)).toBe(MAX_EVENT_READERS_CEILING)
  })

  it('reads the soft open-file limit from /proc/self/limits, and the settings take it unless told', () => {
    const dir = mkdtempSync(join(tmpdir(), 'limits-'))
    const file = join(dir, 'limits')
    writeFileSync(file, 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            5000                 8000                 files\n')
    expect(readOpenFileLimit(file)).toBe(5000)
    expect(readOpenFileLimit(join(dir, 'missing'))).toBeNull()
    expect(readSettings({}, 5000).readerLimits).toEqual({ perRun: 256, perKey: 1024, perNode: 2696 })
    expect(readSettings({ MAX_READERS_PER_RUN: '10', MAX_READERS_PER_KEY: '20', MAX_EVENT_READERS: '30' }, 5000).readerLimits).toEqual({ perRun: 10, perKey: 20, perNode: 30 })
    expect(() => readSettings({ MAX_EVENT_READERS: '0' })).toThrow(/MAX_EVENT_READERS/)
  })
})
