// The subset of autocannon's programmatic API that bench/ uses (the package ships no types).
declare module 'autocannon' {
  export type Histogram = {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
  }
  export type Options = {
    url: string
    connections?: number
    duration?: number
    method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
    headers?: Record<string, string>
    body?: string
    timeout?: number
    title?: string
  }
  export type Result = {
    title?: string
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }
  type Instance = PromiseLike<Result> & {
    stop(): void
    /** `responseTime` is in milliseconds with sub-millisecond precision (the result's histograms keep whole ms). */
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): Instance
  }
  function autocannon(options: Options): Instance
  export default autocannon
}
