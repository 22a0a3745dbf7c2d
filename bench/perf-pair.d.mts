/** Types of bench/perf-pair.mjs, for the TypeScript that imports it (test/bench-perf-pair.test.ts). */

/** perf-pair's options, as its command line sets them. */
export interface PerfPairOptions {
  target: 'rest' | 'graphql'
  production: boolean
  /** Seconds sampled (1–120). */
  seconds: number
  /** Seconds of load before sampling (1–60). */
  warmup: number
  /** Requests per second to each server (100–20,000). */
  rate: number
  connections: number
  /** Leaf symbols listed (1–200). */
  top: number
  keep: boolean
}

/**
 * The command line, bounded.
 * @throws Error naming the flag when a value is out of its range or the option is unknown
 */
export function parseArgs(argv: string[]): PerfPairOptions

/** Leaf frames of `perf script` text counted by kind and by symbol; samples of threads other than `mainTid` count as `other threads`. */
export function countLeaves(text: string, mainTid: number): { samples: number; kinds: Map<string, number>; symbols: Map<string, number> }
