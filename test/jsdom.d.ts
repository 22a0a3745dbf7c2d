/** The part of jsdom's API the tests use (jsdom ships no types; @types/jsdom would pull the DOM lib into every compilation). */
declare module 'jsdom' {
  export class JSDOM {
    constructor(html?: string, options?: { url?: string; pretendToBeVisual?: boolean })
    readonly window: { close(): void } & Record<string, unknown>
  }
}
