#!/usr/bin/env -S node --disable-proto=throw --max-semi-space-size=128
/**
 * The `tributary` command's entry (`npx tributary <command> [options]`, `npm start`): first holds the
 * shape of Node's tick objects (tick-shape.ts: before `process.nextTick` gathers feedback, so that
 * its inline caches stay monomorphic for the process' life), turns Node's module compile cache on
 * (compile-cache.ts; Node ≥ 22.1), then loads and runs the commands (commands.ts). The commands are
 * imported only after the cache is on, so that every module they load, their static imports
 * included, is compiled once and read from the cache on the next start.
 */
import { settleTickShape } from './tick-shape.js'
import { enableCompileCache } from './compile-cache.js'

settleTickShape()
enableCompileCache()
const { run } = await import('./commands.js')
void run(process.argv.slice(2))
