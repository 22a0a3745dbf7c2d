/**
 * Run by tap before the test files (`before` in .taprc): empties the directory where the gateway
 * records the error codes it sends during the run (TRIBUTARY_ERROR_CODE_LOG, see gateway/errors.ts).
 */
import { rmSync } from 'node:fs'
import { errorCodeLogDir } from './error-codes-after.js'

rmSync(errorCodeLogDir, { recursive: true, force: true })
