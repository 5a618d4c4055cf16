import type { DestinationStream } from 'pino'
import pretty from 'pino-pretty'

export const LOG_FORMATS = ['pretty', 'json'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/**
 * LOG_FORMAT=pretty|json chooses; unset, a person at a terminal in development reads pino-pretty's
 * lines, and production (or output piped to a collector) gets one JSON object a line.
 */
export function chooseLogFormat(env: NodeJS.ProcessEnv, stdoutIsTerminal: boolean): LogFormat {
  const asked = env.LOG_FORMAT
  if (asked === undefined || asked === '') return env.NODE_ENV !== 'production' && stdoutIsTerminal ? 'pretty' : 'json'
  if ((LOG_FORMATS as readonly string[]).includes(asked)) return asked as LogFormat
  throw new Error(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(asked)}`)
}

/**
 * Where the logger writes: for `pretty`, pino-pretty in this thread (sync, so a crash loses no line)
 * onto `destination`; for `json`, nothing to add (pino writes to stdout itself). Redaction and the
 * serializers run before either, so both formats carry the same scrubbed fields.
 */
export function logStream(format: LogFormat, destination: NodeJS.WritableStream = process.stdout, colorize = false): DestinationStream | undefined {
  switch (format) {
    case 'pretty':
      return pretty({ destination, sync: true, colorize, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    case 'json':
      return undefined
    default: {
      const unknownFormat: never = format
      throw new Error(`unknown log format ${String(unknownFormat)}`)
    }
  }
}
