/**
 * The runnable examples of a guide page. A fence whose info string is `sh runnable` is an example;
 * the fence right after it, when its info string is `json answer [STATUS]` or `text answer [STATUS]`,
 * says what the example answers (docs/guide/README.md, "Reading the examples").
 */
export type Answer = { format: 'json' | 'stream'; status: number | null; body: string }

export type RunnableExample = { page: string; line: number; script: string; answer: Answer | null }

export type Fence = { info: string; body: string; line: number }

// Every fenced code block of a Markdown page, with its info string and the line it opens on.
// A fence opens with three or more backticks and closes with at least as many (CommonMark).
export function fences(markdown: string): Fence[] {
  const lines = markdown.split('\n')
  const found: Fence[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(.*)$/.exec(lines[i]!)
    if (!open) continue
    const ticks = open[1]!
    const start = i
    const body: string[] = []
    const closing = new RegExp(`^\`{${ticks.length},}\\s*$`)
    for (i++; i < lines.length && !closing.test(lines[i]!); i++) body.push(lines[i]!)
    found.push({ info: open[2]!.trim(), body: body.join('\n'), line: start + 1 })
  }
  return found
}

function readAnswer(fence: Fence | undefined): Answer | null {
  const match = fence && /^(json|text) answer(?: (\d{3}))?$/.exec(fence.info)
  if (!match) return null
  return { format: match[1] === 'json' ? 'json' : 'stream', status: match[2] ? Number(match[2]) : null, body: fence!.body }
}

export function runnableExamples(page: string, markdown: string): RunnableExample[] {
  const all = fences(markdown)
  return all.flatMap((fence, i) =>
    fence.info === 'sh runnable' ? [{ page, line: fence.line, script: fence.body, answer: readAnswer(all[i + 1]) }] : [],
  )
}
