/**
 * Test helper: waits for a condition instead of sleeping a fixed time, so that a test holds on a
 * loaded machine (CI runs the whole suite on 2 cores).
 */

/**
 * Polls `check` every `intervalMs` (default 20 ms) until it returns true.
 * @returns true when it did within `timeoutMs` (default 10000 ms), false otherwise (the caller asserts)
 */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 20): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() >= deadline) return false
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
