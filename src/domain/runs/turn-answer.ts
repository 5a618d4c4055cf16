/**
 * A turn answered as one JSON document (`stream: false`, docs/guide/turn-options.md): the frames the
 * turn's stream would have sent, folded. Each block is one entry, its deltas joined; the rest is the
 * frames' own data. Pure, so a stream and its JSON answer can be shown to hold the same parts.
 */
export type AnswerBlock = { kind: 'text' | 'reasoning' | 'refusal' | 'tool_call'; text: string; tool_name?: string; tool_use_id?: string }

export type TurnAnswer = {
  run: unknown
  config_warnings: unknown[]
  translation_warnings: unknown[]
  blocks: AnswerBlock[]
  done: unknown | null
  error: unknown | null
}

type Frame = { event: string; data: unknown }

export function collectTurnAnswer(frames: readonly Frame[]): TurnAnswer {
  const answer: TurnAnswer = { run: null, config_warnings: [], translation_warnings: [], blocks: [], done: null, error: null }
  let open: AnswerBlock | null = null
  for (const { event, data } of frames) {
    const fields = data as Record<string, unknown>
    switch (event) {
      case 'run':
        answer.run = data
        break
      // A turn that waited for summaries sends config_warnings again when they changed: the last stands.
      case 'config_warnings':
        answer.config_warnings = fields.warnings as unknown[]
        break
      case 'translation_warnings':
        answer.translation_warnings = fields.warnings as unknown[]
        break
      case 'compacting':
        break
      case 'block_start': {
        const { kind, ...rest } = fields as { kind: AnswerBlock['kind'] } & Record<string, string>
        open = { kind, text: '', ...rest }
        answer.blocks.push(open)
        break
      }
      case 'delta':
        if (open) open.text += String(fields.text ?? '')
        break
      case 'block_stop':
        open = null
        break
      case 'done':
        answer.done = data
        break
      case 'error':
        answer.error = data
        break
      default:
        // A frame this fold does not know is left out, never guessed at.
        break
    }
  }
  return answer
}
