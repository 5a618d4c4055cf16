/**
 * Reading a run's stream with its ids over real HTTP (decision 038): the turn's
 * (POST /chats/{id}/responses) and GET /runs/{id}/events alike.
 */

import { createParser } from 'eventsource-parser'

export type Frame = { event: string; data: any; id: string | null }

/**
 * Reads an SSE answer frame by frame (eventsource-parser); `stopWhen` drops the connection after
 * the frame it approves. `firstFrameMs`: from sending the request to the first frame (comments,
 * the heartbeats, are not frames).
 */
export async function readFrames(
  url: string,
  init: RequestInit,
  stopWhen: (frames: Frame[]) => boolean = () => false,
): Promise<{ status: number; headers: Headers; frames: Frame[]; text: string; firstFrameMs: number | null }> {
  const controller = new AbortController()
  const sentAt = performance.now()
  const res = await fetch(url, { ...init, signal: controller.signal })
  const frames: Frame[] = []
  let firstFrameMs: number | null = null
  if (res.status !== 200) return { status: res.status, headers: res.headers, frames, text: await res.text(), firstFrameMs }
  let stopped = false
  const parser = createParser({
    onEvent: (e) => {
      if (stopped) return
      firstFrameMs ??= performance.now() - sentAt
      frames.push({ event: e.event ?? 'message', data: JSON.parse(e.data), id: e.id ?? null })
      if (stopWhen(frames)) {
        stopped = true
        controller.abort()
      }
    },
  })
  const decoder = new TextDecoder()
  try {
    for await (const chunk of res.body!) {
      parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }))
      if (stopped) break
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error
  }
  return { status: 200, headers: res.headers, frames, text: '', firstFrameMs }
}

export const seqOf = (f: Frame) => Number(f.id!.split(':').at(-1))

/** The content a client assembles: each block's kind and whole text, in order. */
export function blocks(frames: Frame[]) {
  const out: { start: unknown; text: string }[] = []
  for (const f of frames) {
    if (f.event === 'block_start') out.push({ start: f.data, text: '' })
    if (f.event === 'delta') out.at(-1)!.text += f.data.text
  }
  return out
}

/**
 * Frames as a stream rebuilt from the ledger sends them (decision 038): the deltas a block sent
 * in a row become one delta, with their text joined and the last one's id.
 */
export function rebuiltForm(frames: Frame[]): Frame[] {
  const out: Frame[] = []
  for (const f of frames) {
    const last = out.at(-1)
    if (f.event === 'delta' && last?.event === 'delta') out[out.length - 1] = { ...last, data: { ...last.data, text: last.data.text + f.data.text }, id: f.id }
    else out.push(f)
  }
  return out
}

/** What a rebuilt `done` cannot know (not stored: decision 038), blanked for comparison with a live one. */
export const withoutUnstored = (frames: Frame[]): Frame[] =>
  frames.map((f) => (f.event === 'done' ? { ...f, data: { ...f.data, model_served: null, provider_response_id: null, compaction: null } } : f))
