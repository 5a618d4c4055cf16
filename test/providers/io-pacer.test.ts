import { describe, expect, it } from 'vitest'
import { createIoPacer } from '../../src/providers/io-pacer.ts'

const spin = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until);
}
const nextLoopTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('the I/O pacer (issue 22)', () => {
  it('lets a stream go on without yielding until it has relayed its parts', async () => {
    await nextLoopTurn()
    const pace = createIoPacer(3, 1_000, 1_000)
    expect(pace()).toBeUndefined()
    expect(pace()).toBeUndefined()
    const yielded = pace()
    expect(yielded).toBeInstanceOf(Promise)
    await yielded
    expect(pace()).toBeUndefined()
  })

  it("yields once one stream's continuous work passes its budget", async () => {
    await nextLoopTurn()
    const pace = createIoPacer(1_000, 5, 1_000)
    expect(pace()).toBeUndefined()
    spin(6)
    expect(pace()).toBeInstanceOf(Promise)
  })

  it('makes every stream yield once all of them together used the shared budget of this loop turn', async () => {
    await nextLoopTurn()
    const busy = createIoPacer(1_000, 1_000, 5)
    const other = createIoPacer(1_000, 1_000, 5)
    expect(busy()).toBeUndefined()
    spin(6)
    // The other stream has done nothing itself, but this turn of the loop is spent.
    const yielded = other()
    expect(yielded).toBeInstanceOf(Promise)
    await yielded
    await nextLoopTurn()
    // A new turn of the loop: a new shared budget.
    expect(other()).toBeUndefined()
  })
})
