import { existsSync, readFileSync, writeFileSync } from 'node:fs'

const HEADER = `# Benchmarks

Measured with \`npm run bench\`, which runs every benchmark of \`bench/\` in turn, each in its own Node
process (\`npm run bench -- NAME\` runs one: \`foundation\`, \`config-resolution\`, \`usage-report\`, \`turns\`, \`packing\`, \`token-estimation\`).
Each benchmark owns one section below, between its \`<!-- bench:NAME:start -->\` and
\`<!-- bench:NAME:end -->\` markers, and replaces only that section when it runs. Every section records
its date, commit, Node version, machine and the exact command. Absolute figures depend on the machine (and on
whatever else runs on it); compare the ratios to the baseline each benchmark measures in the same run.
`

/** Replaces the section `name` of the markdown file (creating the file or appending the section as needed). */
export function writeSection(file: string, name: string, body: string): void {
  const start = `<!-- bench:${name}:start -->`
  const end = `<!-- bench:${name}:end -->`
  const section = `${start}\n${body.trim()}\n${end}`
  const current = existsSync(file) ? readFileSync(file, 'utf8') : HEADER
  const from = current.indexOf(start)
  const to = current.indexOf(end)
  let next: string
  if (from !== -1 && to > from) {
    next = current.slice(0, from) + section + current.slice(to + end.length)
  } else {
    next = `${current.trimEnd()}\n\n${section}\n`
  }
  writeFileSync(file, next)
}
