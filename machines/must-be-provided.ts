/**
 * The placeholder of an invoked actor that does I/O: a machine names it, the edge provides it with
 * `.provide()` (src/actors/chat-actor-host.ts, src/actors/run-lifecycle.ts) and tests with fakes.
 */
export const mustBeProvided = (machine: string, actor: string) => async (): Promise<never> => {
  throw new Error(`${machine}: the actor "${actor}" must be provided with .provide()`)
}
