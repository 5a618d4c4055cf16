import type { LanguageModelV4Prompt } from '@ai-sdk/provider'

/** What the newest prompt asks the sandbox to do (docs/guide/sandbox.md). */
export type SandboxScript = {
  text: string
  think: string[]
  tools: { name: string; args: string }[]
  longWords: number | null
  slowMs: number
  refuse: boolean
  fail: boolean
  flaky: boolean
  failMid: boolean
  /** Answer with the context received (docs/guide/sandbox.md `/context`). */
  context: boolean
}

const TOOL_LINE = /^\/tool\s+([a-zA-Z0-9_-]{1,64})\s+(\{.*\})\s*$/

/** Reads the magic lines of the newest user prompt; any other line is ordinary text. */
export function readSandboxScript(promptText: string): SandboxScript {
  const script: SandboxScript = { text: '', think: [], tools: [], longWords: null, slowMs: 0, refuse: false, fail: false, flaky: false, failMid: false, context: false }
  const plain: string[] = []
  for (const line of promptText.split('\n')) {
    const trimmed = line.trim()
    const [command, ...rest] = trimmed.split(/\s+/)
    const argument = trimmed.slice((command ?? '').length).trim()
    const tool = TOOL_LINE.exec(trimmed)
    if (command === '/think' && argument) script.think.push(argument)
    else if (tool && isJsonObject(tool[2]!)) script.tools.push({ name: tool[1]!, args: tool[2]! })
    else if (command === '/long' && /^\d+$/.test(rest[0] ?? '')) script.longWords = Number(rest[0])
    else if (command === '/slow' && /^\d+$/.test(rest[0] ?? '')) script.slowMs = Math.min(Number(rest[0]), 60_000)
    else if (trimmed === '/refuse') script.refuse = true
    else if (trimmed === '/fail') script.fail = true
    else if (trimmed === '/flaky') script.flaky = true
    else if (trimmed === '/fail-mid') script.failMid = true
    else if (trimmed === '/context') script.context = true
    else plain.push(line)
  }
  script.text = plain.join('\n').trim()
  return script
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value)
  } catch {
    return false
  }
}

/** The turn the sandbox answers: the newest user prompt, or the tool results that end the context. */
export function newestTurn(prompt: LanguageModelV4Prompt): { kind: 'prompt'; text: string } | { kind: 'tool_results'; text: string } {
  const last = prompt.at(-1)
  if (last?.role === 'tool') {
    const text = last.content
      .map((part) => {
        if (part.type !== 'tool-result') return ''
        const output = part.output
        if (output.type === 'text' || output.type === 'error-text') return output.value
        if (output.type === 'content') return output.value.map((v) => (v.type === 'text' ? v.text : '')).join(' ')
        return JSON.stringify(output)
      })
      .join('\n')
    return { kind: 'tool_results', text }
  }
  if (last?.role === 'user') {
    return { kind: 'prompt', text: last.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n') }
  }
  return { kind: 'prompt', text: '' }
}
