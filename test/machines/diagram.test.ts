import { readFileSync } from 'node:fs'
import { getStateNodes, toDirectedGraph, type DirectedGraphNode } from '@xstate/graph'
import { and, createMachine, fromPromise, not, setup, type AnyStateNode } from 'xstate'
import { describe, expect, it } from 'vitest'
import { chatMachine } from '../../machines/chat.machine.ts'
import { CHAT_MACHINE_DRAWING, CHAT_MACHINE_SOURCE } from '../../src/cli/draw-machine.ts'
import { machineToMermaid, renderMachineDocument } from '../../src/cli/machine-diagram.ts'

const drawing = () => readFileSync(CHAT_MACHINE_DRAWING, 'utf8')

/** The Mermaid block of docs/chat-machine.md, as committed. */
function mermaidBlock(): string[] {
  const match = /```mermaid\n([\s\S]*?)```/.exec(drawing())
  expect(match, 'docs/chat-machine.md holds a ```mermaid block').not.toBeNull()
  return match![1]!.split('\n').map((line) => line.trim())
}

/** The names the Mermaid block declares as states: a name alone on its line, or `state NAME {`. */
function declaredStates(lines: string[]): string[] {
  return lines.flatMap((line) => {
    const compound = /^state (\S+) \{$/.exec(line)
    if (compound) return [compound[1]!]
    return /^[A-Za-z_]\w*$/.test(line) ? [line] : []
  })
}

/** @xstate/graph's own walk of the machine: every edge, children's included. */
function edgesOf(graph: DirectedGraphNode): DirectedGraphNode['edges'] {
  return [...graph.edges, ...graph.children.flatMap(edgesOf)]
}

const isUnder = (node: AnyStateNode, ancestor: AnyStateNode) => node.id.startsWith(`${ancestor.id}.`)

describe('docs/chat-machine.md, the chat machine drawn (npm run diagram)', () => {
  it('is what npm run diagram draws from machines/chat.machine.ts today (else: run npm run diagram)', () => {
    expect(drawing(), 'docs/chat-machine.md is stale: run `npm run diagram` and commit it').toBe(renderMachineDocument(chatMachine, CHAT_MACHINE_SOURCE))
  })

  it('declares every state of the machine, nested ones included, once each, and lists every state id', () => {
    const nodes = getStateNodes(chatMachine.root).filter((node) => node !== chatMachine.root)
    expect(nodes.map((node) => node.id)).toContain('chat.running.streaming.cancelling')
    const declared = declaredStates(mermaidBlock())
    // Every key of the chat machine is unique, so each state is drawn under its key.
    expect([...declared].sort()).toEqual(nodes.map((node) => node.key).sort())
    for (const node of nodes) expect(drawing()).toContain(`| \`${node.id}\` |`)
    for (const node of nodes.filter((node) => node.type === 'compound')) expect(mermaidBlock()).toContain(`state ${node.key} {`)
    for (const node of nodes.filter((node) => node.type === 'final')) expect(mermaidBlock()).toContain(`${node.key} --> [*]`)
  })

  it('draws an arrow for every transition that changes state, with its event, and a table row for every transition', () => {
    const lines = mermaidBlock()
    const edges = edgesOf(toDirectedGraph(chatMachine))
    const changing = edges.filter((edge) => edge.transition.target && edge.source !== chatMachine.root)
    expect(changing.length).toBeGreaterThan(40)
    for (const edge of changing) {
      // A compound state's transition into its own child is drawn from the other children.
      const from = isUnder(edge.target, edge.source) ? '\\w+' : edge.source.key
      const arrow = lines.find((line) => new RegExp(`^${from} --> ${edge.target.key} : `).test(line))
      expect(arrow, `an arrow ${edge.source.id} -> ${edge.target.id}`).toBeDefined()
      const event = edge.transition.eventType
      if (!event.startsWith('xstate.')) expect(arrow).toContain(event)
    }
    expect(lines).toContain('note left of relinquished : RELINQUISH, from any state')
    const always = getStateNodes(chatMachine.root).reduce((count, node) => count + (node.always?.length ?? 0), 0)
    const rows = drawing().split('## Transitions')[1]!.split('\n').filter((line) => /^\| `chat[.`]/.test(line))
    expect(rows).toHaveLength(edges.length + always)
  })
})

describe('machineToMermaid', () => {
  it('names invoked actors, delays, combined guards and eventless transitions; draws nesting, refusals and final states', () => {
    const machine = setup({
      actors: { fetchIt: fromPromise(async () => 1) },
      guards: { ready: () => true, late: () => false },
      actions: { noted: () => {} },
      delays: { wait: 10 },
    }).createMachine({
      id: 'm',
      initial: 'start',
      on: { STOP: '.done' },
      states: {
        start: { always: [{ guard: 'late', target: 'busy' }], on: { GO: { guard: and(['ready', not('late')]), target: 'busy' }, POKE: { actions: 'noted' } } },
        busy: {
          initial: 'working',
          invoke: { src: 'fetchIt', onDone: 'done', onError: 'start' },
          states: { working: { after: { wait: 'pausing' } }, pausing: {} },
        },
        done: { type: 'final' },
      },
    })
    expect(machineToMermaid(machine)).toBe(
      [
        'stateDiagram-v2',
        '  [*] --> start',
        '  start',
        '  start : POKE / noted',
        '  state busy {',
        '    [*] --> working',
        '    working',
        '    pausing',
        '    working --> pausing : after wait',
        '  }',
        '  done',
        '  done --> [*]',
        '  start --> busy : always [late]<br/>GO [ready and not late]',
        '  busy --> done : done fetchIt',
        '  busy --> start : error fetchIt',
        '  note left of done : STOP, from any state',
        '',
      ].join('\n'),
    )
  })

  it('a key used twice, or a Mermaid keyword, is drawn under its path', () => {
    const machine = createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { initial: 'end', states: { end: {} } }, b: { initial: 'a', states: { a: {} } } },
    })
    const text = machineToMermaid(machine)
    expect(text).toContain('  state a {\n')
    expect(text).toContain('    [*] --> a_end\n    a_end\n')
    expect(text).toContain('    [*] --> b_a\n    b_a\n')
  })
})
