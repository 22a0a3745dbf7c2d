/**
 * Writing the gateway's own caches (the sources' introspection under `generated/sources/`): a cache
 * that cannot be written (a read-only filesystem, as containers run with `readOnlyRootFilesystem`; a
 * full disk) costs only the next start's fallback, so it is a warning, never a failed start.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/** What {@link saveCacheFile} logs with. */
export interface CacheFileLogger {
  warn(obj: object, msg: string): void
}

/**
 * Writes `text` to `file` (creating its folder) unless the file already holds exactly that text.
 * Never throws: a failure is logged as a warning (`code`, `message`) and the call resolves.
 * @param file absolute path of the cache file.
 * @param text its full content (UTF-8).
 * @param logger where a failure is reported.
 * @returns true when the file holds `text` afterwards (written now or already), false when it could not be written.
 */
export async function saveCacheFile(file: string, text: string, logger: CacheFileLogger): Promise<boolean> {
  try {
    if ((await readFile(file, 'utf8').catch(() => null)) === text) return true
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, text)
    return true
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    logger.warn({ file, err: { code: e.code, message: e.message } }, 'could not write a cache file; the gateway runs on, without it for the next start')
    return false
  }
}
