// The REST source options in the config: every option validated (TRB_ERR_CONFIG_INVALID naming the
// path), the defaults documented in README's REST section, secrets never echoed by validation.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { resolveConfig } from '../gateway/config/index.js'
import { REST_DEFAULTS } from '../gateway/connectors/rest/index.js'

const rest = (extra: Record<string, unknown>) => ({ datasources: [{ kind: 'rest', namespace: 'api', openapi: 'openapi.json', ...extra }] })

t.test('every REST option validates', async (t) => {
  t.doesNotThrow(() => resolveConfig(rest({
    baseUrl: 'http://127.0.0.1:1/api',
    timeoutMs: 1000,
    connectTimeoutMs: 100,
    headersTimeoutMs: 200,
    bodyTimeoutMs: 300,
    connections: 4,
    maxQueue: 0,
    maxResponseBytes: 1024,
    retry: { retries: 0, baseDelayMs: 0, maxDelayMs: 10 },
    circuitBreaker: { threshold: 1, halfOpenAfterMs: 1 },
    healthTimeoutMs: 50,
    redirectHosts: ['docs.example:8443'],
    security: { key: { apiKey: 'k' }, oauth: { clientId: 'a', clientSecret: 'b', scopes: ['r'], tokenUrl: 'https://auth.example/token', clientAuth: 'body' } },
    headers: { 'x-a': 'b' },
    forwardHeaders: ['authorization'],
  })))
  t.doesNotThrow(() => resolveConfig(rest({ circuitBreaker: false })))
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ retry: { retries: -1 } }, /retry\.retries/],
    [{ retry: { tries: 2 } }, /retry/],
    [{ circuitBreaker: true }, /circuitBreaker/],
    [{ circuitBreaker: { threshold: 0 } }, /circuitBreaker/],
    [{ maxResponseBytes: 0 }, /maxResponseBytes/],
    [{ connections: 0 }, /connections/],
    [{ headersTimeoutMs: 1.5 }, /headersTimeoutMs/],
    [{ redirectHosts: [''] }, /redirectHosts/],
    [{ security: { x: { clientAuth: 'header' } } }, /security/],
    [{ security: { x: { tokenUrl: 'file:///etc/passwd' } } }, /security/],
  ]
  for (const [extra, path] of bad) {
    t.throws(() => resolveConfig(rest(extra)), { code: 'TRB_ERR_CONFIG_INVALID', message: path }, JSON.stringify(extra))
  }
  try {
    resolveConfig(rest({ security: { x: { apiKey: 'TOP-SECRET', unknown: 'TOP-SECRET-2' } } }))
    t.fail('should throw')
  } catch (err) {
    t.notMatch((err as Error).message, /TOP-SECRET/, 'validation does not echo credentials')
  }
})

t.test("README's REST section lists every option with its default", async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const section = readme.slice(readme.indexOf('## REST connector'), readme.indexOf('\n## ', readme.indexOf('## REST connector') + 5))
  const options = ['openapi', 'baseUrl', 'timeoutMs', 'connectTimeoutMs', 'headersTimeoutMs', 'bodyTimeoutMs', 'connections', 'maxQueue', 'maxResponseBytes', 'retry.retries', 'retry.baseDelayMs', 'retry.maxDelayMs', 'circuitBreaker', 'healthTimeoutMs', 'security', 'redirectHosts', 'headers', 'forwardHeaders']
  for (const o of options) t.match(section, new RegExp(`\\| \`${o.replace('.', '\\.')}\` \\|`), o)
  t.match(section, new RegExp(`\\| \`timeoutMs\` \\| ${REST_DEFAULTS.timeoutMs} \\|`))
  t.match(section, new RegExp(`\\| \`connections\` \\| ${REST_DEFAULTS.connections} \\|`))
  t.match(section, new RegExp(`\\| \`maxQueue\` \\| ${REST_DEFAULTS.maxQueue} \\|`))
  t.match(section, new RegExp(`\\| \`maxResponseBytes\` \\| ${REST_DEFAULTS.maxResponseBytes} `))
  t.match(section, new RegExp(`\\| \`retry\\.retries\` \\| ${REST_DEFAULTS.retry.retries} \\|`))
  t.match(section, new RegExp(`\\| \`healthTimeoutMs\` \\| ${REST_DEFAULTS.healthTimeoutMs} \\|`))
})
