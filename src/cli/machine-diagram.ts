import type { AnyStateMachine, AnyStateNode } from 'xstate'

/**
 * The chat machine drawn without stately.ai (issue 23): a Mermaid `stateDiagram-v2`, which GitHub
 * renders, and the same transitions as a table, read from the machine's state nodes. Pure: the
 * machine in, text out; `npm run diagram` (src/cli/draw-machine.ts) writes it to docs/, and
 * test/machines/diagram.test.ts fails when the file there is no longer what this gives.
 */

type Transition = AnyStateNode['transitions'] extends Map<string, Array<infer T>> ? T : never

/** One transition, as drawn: where from, on what, under which guard, where to (none: the state stays). */
export type DrawnTransition = {
  source: AnyStateNode
  event: string
  guard: string | null
  targets: AnyStateNode[]
  actions: string[]
}

/** Every state node under the root (the root itself not included), parents before their children, in the machine's order. */
export function stateNodesOf(machine: AnyStateMachine): AnyStateNode[] {
  const out: AnyStateNode[] = []
  const walk = (node: AnyStateNode) => {
    for (const child of Object.values(node.states) as AnyStateNode[]) {
      out.push(child)
      walk(child)
    }
  }
  walk(machine.root)
  return out
}

type GuardLike = string | { type?: string } | ((...args: never[]) => unknown) | undefined

/** `and`, `or` and `not` from xstate keep their operands on `.guards`. */
function guardText(guard: GuardLike, nested = false): string {
  if (guard === undefined) return ''
  if (typeof guard === 'string') return guard
  if (typeof guard === 'function') {
    const operands = (guard as { guards?: GuardLike[] }).guards
    if (operands && guard.name === 'not') return `not ${guardText(operands[0], true)}`
    if (operands && (guard.name === 'and' || guard.name === 'or')) {
      const text = operands.map((operand) => guardText(operand, true)).join(` ${guard.name} `)
      return nested ? `(${text})` : text
    }
    return guard.name || 'inline guard'
  }
  return guard.type ?? 'inline guard'
}

function actionText(action: unknown): string {
  if (typeof action === 'string') return action
  if (typeof action === 'function') return action.name || 'inline action'
  if (action && typeof action === 'object' && 'type' in action) return String((action as { type: unknown }).type)
  return 'inline action'
}

/** A state's own entry or exit actions: not those xstate adds to start and cancel its delayed (`after`) transitions. */
function ownActions(node: AnyStateNode, actions: readonly unknown[]): string[] {
  const delayed = new Set(node.after.map((transition) => transition.eventType))
  const internal = (action: unknown) => {
    const fields = action as { type?: unknown; id?: unknown; sendId?: unknown }
    return (fields.type === 'xstate.raise' && delayed.has(fields.id as string)) || (fields.type === 'xstate.cancel' && delayed.has(fields.sendId as string))
  }
  return actions.filter((action) => !internal(action)).map(actionText)
}

/**
 * The event as a reader names it: an invoked actor's completion by the actor (`done reapRun`,
 * `error reapRun`), a delayed transition by its delay (`after settleRetry`), an eventless one
 * `always`; any other event as it is sent.
 */
function eventText(node: AnyStateNode, eventType: string): string {
  const delayed = node.after.find((transition) => transition.eventType === eventType)
  if (delayed) return `after ${typeof delayed.delay === 'number' ? `${delayed.delay} ms` : delayed.delay}`
  const actorEvent = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType)
  if (actorEvent) {
    const [, kind, actorId] = actorEvent
    const invoked = node.invoke.find((definition) => definition.id === actorId)
    const src = invoked && typeof invoked.src === 'string' ? invoked.src : actorId
    return `${kind} ${src}`
  }
  return eventType
}

function drawnTransition(node: AnyStateNode, event: string, transition: Transition): DrawnTransition {
  return {
    source: node,
    event,
    guard: transition.guard === undefined ? null : guardText(transition.guard as GuardLike),
    targets: (transition.target ?? []) as AnyStateNode[],
    actions: (transition.actions ?? []).map(actionText),
  }
}

/** The transitions of one state node, in the order the machine tries them (the root's too). */
export function transitionsOf(node: AnyStateNode): DrawnTransition[] {
  const out: DrawnTransition[] = []
  for (const transition of node.always ?? []) out.push(drawnTransition(node, 'always', transition))
  for (const [eventType, transitions] of node.transitions) {
    for (const transition of transitions) out.push(drawnTransition(node, eventText(node, eventType), transition))
  }
  return out
}

// Words Mermaid's state diagram lexer takes as keywords, never as a state's name.
const RESERVED = new Set(['state', 'note', 'end', 'default', 'class', 'classdef', 'direction', 'scale', 'as', 'stateDiagram', 'stateDiagram-v2'])

/**
 * Mermaid's name for each state: its key where no other state has it (every state of the chat
 * machine), else its path joined with `_`. Mermaid takes no `-`, `:`, `{` or space in a name.
 */
export function mermaidNames(machine: AnyStateMachine): Map<AnyStateNode, string> {
  const nodes = stateNodesOf(machine)
  const keyCount = new Map<string, number>()
  for (const node of nodes) keyCount.set(node.key, (keyCount.get(node.key) ?? 0) + 1)
  const clean = (text: string) => text.replace(/[^A-Za-z0-9_]/g, '_')
  const names = new Map<AnyStateNode, string>()
  for (const node of nodes) {
    const plain = keyCount.get(node.key) === 1 && !RESERVED.has(node.key.toLowerCase()) && /^[A-Za-z_]\w*$/.test(node.key)
    names.set(node, plain ? node.key : clean(node.path.join('_')))
  }
  return names
}

/** Mermaid ends a label at `:`, `;` or a line break, and reads `#`, `{`, `}`, `<` and `>` as its own. */
const label = (text: string) => text.replace(/[:;#{}<>\n]/g, ' ').replace(/\s+/g, ' ').trim()

const withGuard = (transition: DrawnTransition) => (transition.guard ? `${transition.event} [${transition.guard}]` : transition.event)

const isDescendant = (node: AnyStateNode, ancestor: AnyStateNode): boolean => {
  for (let parent = node.parent; parent; parent = parent.parent) if (parent === ancestor) return true
  return false
}

const atomicDescendants = (node: AnyStateNode): AnyStateNode[] =>
  (Object.values(node.states) as AnyStateNode[]).flatMap((child) => (Object.keys(child.states).length === 0 ? [child] : atomicDescendants(child)))

/** The innermost compound state holding both (the root when none): where Mermaid is told of their edge. */
function commonParent(a: AnyStateNode, b: AnyStateNode): AnyStateNode {
  for (let parent = a.parent; parent; parent = parent.parent) if (b === parent || isDescendant(b, parent)) return parent
  return a.machine.root
}

/**
 * The machine as Mermaid `stateDiagram-v2` text. Every state is drawn, compound ones as boxes
 * around their children with an arrow from `[*]` to their initial state, final ones with an arrow to
 * `[*]`. A transition that changes state is an arrow labelled with its event and guard (several
 * between the same two states share one arrow, a line each); one that leaves the state as it is
 * (a refusal, a note taken) is a line inside the state's box, with its actions. What the root (any state) does on an
 * event is a note by its target. A compound state's transition into its own child is drawn from
 * each of its other children. Compound states' transitions that leave the state as it is are in
 * the table only (see `renderMachineDocument`).
 */
export function machineToMermaid(machine: AnyStateMachine): string {
  const names = mermaidNames(machine)
  const name = (node: AnyStateNode) => names.get(node)!
  const root = machine.root
  const lines: string[] = ['stateDiagram-v2']
  // Arrows grouped by the compound state whose box holds both ends, and by their two ends.
  const arrows = new Map<AnyStateNode, Map<string, string[]>>()
  const addArrow = (from: AnyStateNode, to: AnyStateNode, text: string) => {
    const holder = commonParent(from, to)
    const byEnds = arrows.get(holder) ?? new Map<string, string[]>()
    arrows.set(holder, byEnds)
    const ends = `${name(from)} --> ${name(to)}`
    byEnds.set(ends, [...(byEnds.get(ends) ?? []), label(text)])
  }
  const descriptions = new Map<AnyStateNode, string[]>()
  const notes: string[] = []
  for (const node of [root, ...stateNodesOf(machine)]) {
    for (const transition of transitionsOf(node)) {
      if (transition.targets.length === 0) {
        const done = transition.actions.length ? ` / ${transition.actions.join(', ')}` : ''
        if (Object.keys(node.states).length === 0) descriptions.set(node, [...(descriptions.get(node) ?? []), label(withGuard(transition) + done)])
        continue
      }
      for (const target of transition.targets) {
        if (node === root) notes.push(`note left of ${name(target)} : ${label(`${withGuard(transition)}, from any state`)}`)
        else if (isDescendant(target, node)) {
          for (const from of atomicDescendants(node)) if (from !== target) addArrow(from, target, `${withGuard(transition)} (any ${node.key} state)`)
        } else addArrow(node, target, withGuard(transition))
      }
    }
  }
  const emit = (compound: AnyStateNode, depth: number) => {
    const pad = '  '.repeat(depth)
    const children = Object.values(compound.states) as AnyStateNode[]
    for (const initial of compound.initial?.target ?? []) lines.push(`${pad}[*] --> ${name(initial as AnyStateNode)}`)
    for (const child of children) {
      if (Object.keys(child.states).length > 0) {
        lines.push(`${pad}state ${name(child)} {`)
        emit(child, depth + 1)
        lines.push(`${pad}}`)
      } else {
        lines.push(`${pad}${name(child)}`)
        for (const description of descriptions.get(child) ?? []) lines.push(`${pad}${name(child)} : ${description}`)
      }
    }
    for (const child of children) if (child.type === 'final') lines.push(`${pad}${name(child)} --> [*]`)
    for (const [ends, texts] of arrows.get(compound) ?? []) lines.push(`${pad}${ends} : ${texts.join('<br/>')}`)
  }
  emit(root, 1)
  for (const note of notes) lines.push(`  ${note}`)
  return lines.join('\n') + '\n'
}

const cell = (text: string) => text.replace(/\|/g, '\\|')
const code = (text: string) => (text ? `\`${text}\`` : '')

/**
 * docs/chat-machine.md: the drawing and, as text, every state and every transition, so that the
 * machine can be read where Mermaid is not rendered.
 */
export function renderMachineDocument(machine: AnyStateMachine, source: string): string {
  const nodes = stateNodesOf(machine)
  const kind = (node: AnyStateNode) =>
    node.type === 'final' ? 'final' : node.type === 'compound' ? `compound, starts in ${code(node.initial?.target?.map((t) => (t as AnyStateNode).key).join(', ') ?? '')}` : node.type
  const stateRows = nodes.map((node) => {
    const invoked = node.invoke.map((definition) => (typeof definition.src === 'string' ? definition.src : definition.id))
    const entry = ownActions(node, node.entry)
    const exit = ownActions(node, node.exit)
    return `| ${code(node.id)} | ${kind(node)} | ${invoked.map(code).join(', ')} | ${entry.map(code).join(', ')} | ${exit.map(code).join(', ')} |`
  })
  const transitionRows = [machine.root, ...nodes].flatMap((node) =>
    transitionsOf(node).map(
      (transition) =>
        `| ${code(node.id)}${node === machine.root ? ' (any state)' : ''} | ${code(transition.event)} | ${cell(code(transition.guard ?? ''))} | ${
          transition.targets.length ? transition.targets.map((target) => code(target.id)).join(', ') : 'stays'
        } | ${transition.actions.map(code).join(', ')} |`,
    ),
  )
  return [
    `# The chat machine`,
    '',
    `Drawn by \`npm run diagram\` from \`${source}\` (src/cli/machine-diagram.ts); do not edit it by hand:`,
    'test/machines/diagram.test.ts fails when this page no longer matches the machine. Nothing here needs',
    'the internet: GitHub renders the diagram, any Mermaid renderer does, and the tables below say the same as text.',
    '',
    'An arrow is a transition that changes state, labelled with its event and `[guard]`; the guards of the',
    'arrows leaving a state are tried in the order of the table. `done X` and `error X` are the end of the',
    'invoked actor `X`, `after X` a delay, `always` a transition taken as soon as the state is entered.',
    "A line inside a state's box is a transition that leaves the state as it is (a refusal, a note taken).",
    'What the machine does in any state is a note by its target; what a compound state does without',
    'changing state is in the table only.',
    '',
    '```mermaid',
    machineToMermaid(machine).trimEnd(),
    '```',
    '',
    '## States',
    '',
    '| state | kind | invokes | on entry | on exit |',
    '|---|---|---|---|---|',
    ...stateRows,
    '',
    '## Transitions',
    '',
    'In the order the machine tries them; `stays` means no change of state (the actions still run).',
    '',
    '| from | event | guard | to | actions |',
    '|---|---|---|---|---|',
    ...transitionRows,
    '',
  ].join('\n')
}
