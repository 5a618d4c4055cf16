import { pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * Gemini API, streamed (POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse): `data:`
 * events only, CRLF line endings, each a GenerateContentResponse with the candidate's new parts and
 * the usage so far; the last carries finishReason. Gemini 2.5 thinks without showing it, so its
 * usage has thoughtsTokenCount beside candidatesTokenCount.
 */

const MODEL = 'gemini-2.5-flash'

/** Gemini ends its SSE lines with CRLF. */
const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`

const headers = {
  'content-type': 'text/event-stream',
  'x-goog-api-client': 'genai-js',
  'server-timing': 'gfet4t7; dur=1187',
  vary: 'Origin, X-Origin, Referer',
}

type Counts = { prompt: number; cached?: number; candidates: number; thoughts: number }
const usageMetadata = (c: Counts) => ({
  promptTokenCount: c.prompt,
  // Absent while the model is still thinking.
  ...(c.candidates > 0 ? { candidatesTokenCount: c.candidates } : {}),
  totalTokenCount: c.prompt + c.candidates + c.thoughts,
  ...(c.cached ? { cachedContentTokenCount: c.cached } : {}),
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: c.prompt }],
  ...(c.cached ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: c.cached }] } : {}),
  thoughtsTokenCount: c.thoughts,
})

/** One chunk per part; usage grows as the candidate does; the last chunk says STOP. */
function textStream(responseId: string, parts: string[], counts: Counts[]): string[] {
  return parts.map((text, i) =>
    chunk({
      candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(i === parts.length - 1 ? { finishReason: 'STOP' } : {}), index: 0 }],
      usageMetadata: usageMetadata(counts[i]!),
      modelVersion: MODEL,
      responseId,
    }),
  )
}

const answer = pieces('The capital of Norway is', ' Oslo, which sits at the head of the Oslofjord', '.')
export const GOOGLE_RESPONSE_ID = 'mJ3vaNWAK4mvz7IP0p6T4Qk'
/** Implicit caching: 1290 prompt tokens, 1024 of them cached; 9 answer tokens after 437 thinking. */
const text: ReplayResponse = {
  kind: 'stream',
  headers,
  events: textStream(GOOGLE_RESPONSE_ID, answer.parts, [
    { prompt: 1290, cached: 1024, candidates: 5, thoughts: 437 },
    { prompt: 1290, cached: 1024, candidates: 15, thoughts: 437 },
    { prompt: 1290, cached: 1024, candidates: 16, thoughts: 437 },
  ]),
}

const callArgs = { city: 'Oslo' }
const toolCall: ReplayResponse = {
  kind: 'stream',
  headers,
  events: [
    chunk({
      candidates: [
        {
          content: {
            parts: [{ functionCall: { name: 'get_weather', args: callArgs }, thoughtSignature: 'CiQB0e2Kb6vVq3lJ8y1sXoTgk9QhZ3m7cY2uFwR4pN1aD6eH0bM=' }],
            role: 'model',
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: usageMetadata({ prompt: 61, candidates: 15, thoughts: 58 }),
      modelVersion: MODEL,
      responseId: 'nK4waOq1Gb2Qz7IPxLGJ8Ac',
    }),
  ],
}

const weather = pieces('It is sunny in Oslo', ' at 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers,
  events: textStream('oL5xaPr2Hc3Rz7IPyMKK9Bd', weather.parts, [
    { prompt: 98, candidates: 6, thoughts: 0 },
    { prompt: 98, candidates: 12, thoughts: 0 },
  ]),
}

export const google: VendorFixture = {
  vendor: 'google',
  basePath: '/google/v1beta',
  isStreamPath: (path) => /^\/google\/v1beta\/models\/[\w.-]+:streamGenerateContent\?alt=sse$/.test(path),
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: null, arguments: JSON.stringify(callArgs) },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 503,
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
  },
}

/** One chunk of the candidate: its new parts, the usage so far, and finishReason when it ends. */
const candidateChunk = (responseId: string, parts: unknown[], counts: Counts, finishReason?: string) =>
  chunk({
    candidates: [{ content: { parts, role: 'model' }, ...(finishReason ? { finishReason } : {}), index: 0 }],
    usageMetadata: usageMetadata(counts),
    modelVersion: MODEL,
    responseId,
  })

/**
 * Thought summaries (thinkingConfig.includeThoughts): the reasoning streams first as parts marked
 * `thought: true`, a heading in bold, then the summary; the last thought part carries the thought
 * signature. The answer's text parts follow, and finishReason comes in a chunk of its own whose
 * only part is an empty text carrying another signature (Gemini signs the end of a text answer
 * there when streaming). Usage grows chunk by chunk: thoughtsTokenCount first, then
 * candidatesTokenCount; the last chunk's counts are the answer's.
 */
const thoughts = pieces(
  '**Identifying the capital**\n\nThe user wants the capital of Norway in one sentence.',
  " It's Oslo; I can add where it lies to make the sentence useful.",
)
const thoughtAnswer = pieces('The capital of Norway is Oslo,', ' at the head of the Oslofjord.')
export const GOOGLE_THOUGHT_SIGNATURE =
  'CtcCAdHtim8kQ3vR9xLp2Zs7Fq4Wn1Yb6Tc0Jd5Mh8Ue3Gk7Ao2Ri9Vs4Xl1Pn6Cw0Ey5Hb8Qz3Tf7Ju2Kd9Mg4Ls1Ox6Wa0Iv5Nr8Bp3Ye7Sh2Dk9Fm4Gj1Cq6Zt0Xu5Aw8Lb3Nc7Re2Vd9Ko4Pi1Hs6Mf0Jy5Tg8Ql3Wr7Ua2Ex9Sn4Dz1Oc6Fb0Ik5Gm8Yh3Zv7Aj2Bt9Cp4Lx1Nu6Eq0Rw5Kd8Hs3Tm7Va2Wf9Xg4Yi1Zl6Ao0Bn5Cr8Ds3Ep7Ft2GuAQ=='
export const GOOGLE_ANSWER_SIGNATURE = 'CiQB0e2Kb3XhT7cJm1wQ9vL5sR2dF8gY4pN6aZ0uE3iO7kH1bM='
export const GOOGLE_THOUGHTS_RESPONSE_ID = 'pM6yaRs3Id4Sz7IPzNLL0Ce'
/** 14 prompt tokens; 16 answer tokens after 236 thinking, the summary shown being part of them. */
export const GOOGLE_THOUGHT_SUMMARIES = {
  reasoning: thoughts.text,
  text: thoughtAnswer.text,
  usage: { prompt: 14, candidates: 16, thoughts: 236 },
  response: {
    kind: 'stream',
    headers,
    events: [
      candidateChunk(GOOGLE_THOUGHTS_RESPONSE_ID, [{ text: thoughts.parts[0], thought: true }], { prompt: 14, candidates: 0, thoughts: 118 }),
      candidateChunk(GOOGLE_THOUGHTS_RESPONSE_ID, [{ text: thoughts.parts[1], thought: true, thoughtSignature: GOOGLE_THOUGHT_SIGNATURE }], {
        prompt: 14,
        candidates: 0,
        thoughts: 236,
      }),
      candidateChunk(GOOGLE_THOUGHTS_RESPONSE_ID, [{ text: thoughtAnswer.parts[0] }], { prompt: 14, candidates: 9, thoughts: 236 }),
      candidateChunk(GOOGLE_THOUGHTS_RESPONSE_ID, [{ text: thoughtAnswer.parts[1] }], { prompt: 14, candidates: 16, thoughts: 236 }),
      candidateChunk(GOOGLE_THOUGHTS_RESPONSE_ID, [{ text: '', thoughtSignature: GOOGLE_ANSWER_SIGNATURE }], { prompt: 14, candidates: 16, thoughts: 236 }, 'STOP'),
    ],
  } satisfies ReplayResponse,
}

/**
 * A plain answer whose finishReason arrives alone: the text chunks carry no finishReason, and a
 * last chunk with one empty text part says STOP with the final usage. The package must end the
 * answer there, not at the last chunk with text.
 */
const lateFinish = pieces('Oslo is the capital', ' of Norway.')
export const GOOGLE_FINISH_IN_OWN_CHUNK_ID = 'qN7zaSt4Je5Tz7IP0OMM1Df'
export const GOOGLE_FINISH_IN_OWN_CHUNK = {
  text: lateFinish.text,
  usage: { prompt: 1290, cached: 1024, candidates: 8, thoughts: 301 },
  response: {
    kind: 'stream',
    headers,
    events: [
      candidateChunk(GOOGLE_FINISH_IN_OWN_CHUNK_ID, [{ text: lateFinish.parts[0] }], { prompt: 1290, cached: 1024, candidates: 5, thoughts: 301 }),
      candidateChunk(GOOGLE_FINISH_IN_OWN_CHUNK_ID, [{ text: lateFinish.parts[1] }], { prompt: 1290, cached: 1024, candidates: 8, thoughts: 301 }),
      candidateChunk(GOOGLE_FINISH_IN_OWN_CHUNK_ID, [{ text: '' }], { prompt: 1290, cached: 1024, candidates: 8, thoughts: 301 }, 'STOP'),
    ],
  } satisfies ReplayResponse,
}
