#!/usr/bin/env -S node --disable-proto=throw --max-semi-space-size=128
/**
 * The `tributary` command's entry (`npx tributary <command> [options]`, `npm start`): turns Node's
 * module compile cache on (compile-cache.ts; Node ≥ 22.1), then loads and runs the commands
 * (commands.ts). The commands are imported only after the cache is on, so that every module they
 * load, their static imports included, is compiled once and read from the cache on the next start.
 */
import { enableCompileCache } from './compile-cache.js'

enableCompileCache()
const { run } = await import('./commands.js')
void run(process.argv.slice(2))
