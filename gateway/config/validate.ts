/**
 * Validation of a deployment's configuration with ajv (JSON Schema draft-07 + a `function` keyword).
 * Runs once at startup; the first error is reported with a JavaScript-style path:
 * `datasources[1].url: must be string`.
 */
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { Ajv, _, type ErrorObject, type KeywordCxt, type ValidateFunction } from 'ajv'
import { ConfigInvalidError } from '../errors.js'
import { eventTriggersSchema } from './event-triggers.js'

const name = '^[_A-Za-z][_0-9A-Za-z]*$'
const fn = { function: true }
/** `hooks.global.*`: a hook with its filter (README "Hooks"). */
const originHook = {
  type: 'object',
  required: ['hook'],
  additionalProperties: false,
  properties: { hook: fn, enabled: { type: 'boolean' }, namespaces: { type: 'array', items: { type: 'string' } } },
}
const stringOrList = { anyOf: [{ type: 'string', minLength: 1 }, { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } }] }

const base = {
  kind: { type: 'string' },
  namespace: { type: 'string', pattern: name, not: { anyOf: [{ pattern: '__' }, { pattern: '_$' }] } },
  name: { type: 'string', pattern: '^[A-Za-z0-9_.#-]+$' },
}

/** `merge` of a graphql or federation source: type name → merged-type config (gateway/compose/merge.ts). */
const merge = {
  type: 'object',
  propertyNames: { pattern: name },
  additionalProperties: {
    type: 'object',
    additionalProperties: false,
    properties: {
      selectionSet: { type: 'string', pattern: '^\\s*\\{' },
      fieldName: { type: 'string', pattern: name },
      args: { anyOf: [{ type: 'object', propertyNames: { pattern: name }, additionalProperties: { type: 'string', pattern: name } }, fn] },
      key: { anyOf: [{ type: 'string', pattern: name }, { type: 'array', minItems: 1, items: { type: 'string', pattern: name } }, fn] },
      argsFromKeys: { anyOf: [{ type: 'string', pattern: name }, fn] },
      canonical: { type: 'boolean' },
    },
    dependencies: {
      fieldName: { anyOf: [{ required: ['args'] }, { required: ['key'] }] },
      args: ['fieldName', 'selectionSet'],
      key: ['argsFromKeys', 'fieldName', 'selectionSet'],
      argsFromKeys: ['key'],
    },
    not: { required: ['args', 'key'] },
  },
}

const headers = { type: 'object', additionalProperties: { type: 'string' } }

/** `subscriptions` of a GraphQL source or a federation subgraph (connectors/federation/subscriptions.ts). */
const subscriptionTransport = {
  type: 'object',
  additionalProperties: false,
  properties: { url: { type: 'string', pattern: '^(wss?|https?)://' }, protocol: { enum: ['graphql-ws', 'sse'] } },
}

/** The options every remote GraphQL source kind (`graphql`, `federation`) shares. */
const remoteGraphQL = {
  timeoutMs: { type: 'integer', minimum: 1 },
  headers,
  forwardHeaders: { type: 'array', items: { type: 'string' } },
  merge,
}

const sourceSchemas = {
  database: {
    type: 'object',
    required: ['kind', 'url'],
    additionalProperties: false,
    properties: {
      ...base,
      url: { type: 'string', pattern: '^(sqlite:|postgres(ql)?://|mysql://|mariadb://)' },
      schema: { type: 'string', minLength: 1 },
      migrations: { type: 'object', additionalProperties: { type: 'object', required: ['up'], properties: { up: fn, down: fn } } },
      pool: { type: 'object', additionalProperties: false, properties: { min: { type: 'integer', minimum: 0 }, max: { type: 'integer', minimum: 1 }, acquireTimeoutMs: { type: 'integer', minimum: 1, maximum: 2147483647 } } },
      maxTake: { type: 'integer', minimum: 1 },
      maxNestedWrites: { type: 'integer', minimum: 0 },
      lookupBatchSize: { type: 'integer', minimum: 1, maximum: 10000 },
      rawSql: { enum: [true, false, 'development'] },
      statementTimeoutMs: { type: 'integer', minimum: 1, maximum: 2147483647 },
      sqliteWorkers: { type: 'object', additionalProperties: false, properties: { maxQueue: { type: 'integer', minimum: 0, maximum: 100000 }, maxWaitMs: { type: 'integer', minimum: 1, maximum: 2147483647 }, requestBudgetMs: { type: 'integer', minimum: 1, maximum: 2147483647 } } },
      columns: {
        type: 'object',
        propertyNames: { pattern: '^.+\\..+$' },
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          properties: {
            filledByDatabase: { type: 'boolean' },
            dateTimeFormat: { type: 'string', pattern: '^(unixepoch|unixepoch-ms|YYYY-MM-DD([ T]HH:mm(:ss(\\.SSS)?)?(Z|\\+00:00)?)?)$' },
          },
        },
      },
      functions: { anyOf: [{ type: 'boolean' }, { type: 'array', items: { type: 'string', minLength: 1 } }] },
      changes: {
        anyOf: [
          { type: 'boolean' },
          {
            type: 'object',
            additionalProperties: false,
            properties: {
              method: { enum: ['triggers', 'logical', 'binlog', 'auto'] },
              install: { type: 'boolean' },
              slot: { type: 'string', pattern: '^[a-z0-9_]{1,63}$' },
              publication: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
              maxWaitForSubscriberMs: { type: 'integer', minimum: 0, maximum: 86400000 },
              tables: { type: 'array', items: { type: 'string', minLength: 1 } },
              pollIntervalMs: { type: 'integer', minimum: 10, maximum: 3600000 },
              maxBufferedEvents: { type: 'integer', minimum: 1, maximum: 1000000 },
              maxBatchSize: { type: 'integer', minimum: 1, maximum: 10000 },
              backlogSize: { type: 'integer', minimum: 1, maximum: 100000000 },
              maxPayloadBytes: { type: 'integer', minimum: 64, maximum: 67108864 },
              channel: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
              maxReconnectDelayMs: { type: 'integer', minimum: 100, maximum: 600000 },
              serverId: { type: 'integer', minimum: 1, maximum: 4294967295 },
            },
          },
        ],
      },
      uniqueKeys: {
        type: 'object',
        propertyNames: { pattern: name },
        additionalProperties: { type: 'array', minItems: 1, items: { type: 'array', minItems: 1, items: { type: 'string', pattern: name } } },
      },
      relations: {
        type: 'array',
        items: {
          type: 'object',
          required: ['from', 'to'],
          additionalProperties: false,
          properties: { from: { type: 'string', pattern: '^[_A-Za-z][_0-9A-Za-z]*\\.[_A-Za-z][_0-9A-Za-z]*$' }, to: { type: 'string', pattern: '^[_A-Za-z][_0-9A-Za-z]*\\.[_A-Za-z][_0-9A-Za-z]*$' } },
        },
      },
    },
  },
  rest: {
    type: 'object',
    required: ['kind', 'openapi'],
    additionalProperties: false,
    properties: {
      ...base,
      openapi: { type: 'string', minLength: 1 },
      baseUrl: { type: 'string', pattern: '^https?://' },
      timeoutMs: { type: 'integer', minimum: 1 },
      connectTimeoutMs: { type: 'integer', minimum: 1 },
      headersTimeoutMs: { type: 'integer', minimum: 1 },
      bodyTimeoutMs: { type: 'integer', minimum: 1 },
      connections: { type: 'integer', minimum: 1 },
      maxQueue: { type: 'integer', minimum: 0 },
      maxResponseBytes: { type: 'integer', minimum: 1 },
      retry: {
        type: 'object',
        additionalProperties: false,
        properties: { retries: { type: 'integer', minimum: 0, maximum: 10 }, baseDelayMs: { type: 'integer', minimum: 0 }, maxDelayMs: { type: 'integer', minimum: 0 } },
      },
      circuitBreaker: {
        anyOf: [
          { const: false },
          { type: 'object', additionalProperties: false, properties: { threshold: { type: 'integer', minimum: 1 }, halfOpenAfterMs: { type: 'integer', minimum: 1 } } },
        ],
      },
      healthTimeoutMs: { type: 'integer', minimum: 1 },
      redirectHosts: { type: 'array', items: { type: 'string', minLength: 1 } },
      security: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          properties: {
            apiKey: { type: 'string' },
            token: { type: 'string' },
            username: { type: 'string' },
            password: { type: 'string' },
            clientId: { type: 'string' },
            clientSecret: { type: 'string' },
            scopes: { type: 'array', items: { type: 'string' } },
            tokenUrl: { type: 'string', pattern: '^https?://' },
            clientAuth: { enum: ['basic', 'body'] },
            fromCaller: { type: 'boolean' },
          },
        },
      },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      forwardHeaders: { type: 'array', items: { type: 'string' } },
    },
  },
  graphql: {
    type: 'object',
    required: ['kind', 'url'],
    additionalProperties: false,
    properties: {
      ...base,
      url: { type: 'string', pattern: '^https?://' },
      subscriptions: subscriptionTransport,
      ...remoteGraphQL,
    },
  },
  federation: {
    type: 'object',
    required: ['kind'],
    oneOf: [{ required: ['subgraphs'] }, { required: ['supergraph'] }],
    additionalProperties: false,
    properties: {
      ...base,
      supergraph: { type: 'string', minLength: 1 },
      supergraphHeaders: headers,
      supergraphPollMs: { type: 'integer', minimum: 1000, maximum: 86_400_000 },
      subgraphs: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['name', 'url'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_-]*$' },
            url: { type: 'string', pattern: '^https?://' },
            headers,
            subscriptions: subscriptionTransport,
          },
        },
      },
      overrideLabels: fn,
      ...remoteGraphQL,
    },
  },
  schema: {
    type: 'object',
    required: ['kind', 'typeDefs'],
    additionalProperties: false,
    properties: {
      ...base,
      typeDefs: { type: 'string', minLength: 1 },
      resolvers: { type: 'object' },
    },
  },
  events: {
    type: 'object',
    required: ['kind', 'broker', 'url', 'schema'],
    additionalProperties: false,
    properties: {
      ...base,
      broker: { enum: ['nats', 'amqp', 'mqtt', 'redis'] },
      url: { type: 'string', pattern: '^(nats|tls|amqps?|mqtts?|wss?|rediss?)://' },
      schema: { type: 'string', minLength: 1 },
      maxPayloadBytes: { type: 'integer', minimum: 1, maximum: 67_108_864 },
      maxBufferedEvents: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      connectTimeoutMs: { type: 'integer', minimum: 1, maximum: 600_000 },
      maxReconnectDelayMs: { type: 'integer', minimum: 100, maximum: 600_000 },
    },
  },
} as const

const configSchema = {
  type: 'object',
  required: ['datasources'],
  additionalProperties: false,
  properties: {
    datasources: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['kind'],
        properties: { kind: { enum: Object.keys(sourceSchemas) } },
        allOf: Object.entries(sourceSchemas).map(([kind, s]) => ({ if: { properties: { kind: { const: kind } } }, then: s })),
      },
    },
    mode: { enum: ['development', 'production'] },
    server: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', minLength: 1 },
        port: { type: 'integer', minimum: 0, maximum: 65535 },
        bodyLimit: { type: 'integer', minimum: 1 },
        requestTimeoutMs: { type: 'integer', minimum: 0 },
        maxResponseBytes: { type: 'integer', minimum: 1 },
        maxIntrospectionBytes: { type: 'integer', minimum: 1 },
        maxWebSockets: { type: 'integer', minimum: 0 },
        maxEventStreams: { type: 'integer', minimum: 0 },
        maxConnections: { type: 'integer', minimum: 1 },
        logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
        allowedOrigins: { type: 'array', items: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\\s]+$' } },
        rateLimit: {
          type: 'object',
          required: ['max', 'timeWindowMs'],
          additionalProperties: false,
          properties: {
            max: { type: 'integer', minimum: 1 },
            timeWindowMs: { type: 'integer', minimum: 1, maximum: 2147483647 },
            key: { enum: ['ip', 'sub'] },
            redisUrl: { type: 'string', pattern: '^rediss?://' },
            keyPrefix: { type: 'string', minLength: 1 },
          },
        },
        allowedHosts: {
          type: 'array',
          minItems: 1,
          items: { type: 'string', pattern: '^(\\.?[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$' },
        },
        shutdownDelayMs: { type: 'integer', minimum: 0, maximum: 600000 },
        healthTimeoutMs: { type: 'integer', minimum: 1, maximum: 10000 },
        federation: {
          oneOf: [
            { type: 'boolean' },
            { type: 'object', additionalProperties: false, properties: { maxRepresentations: { type: 'integer', minimum: 1, maximum: 100000 } } },
          ],
        },
      },
    },
    pubsub: {
      type: 'object',
      additionalProperties: false,
      properties: {
        redisUrl: { type: 'string', pattern: '^rediss?://' },
        keyPrefix: { type: 'string', minLength: 1, maxLength: 200 },
        lockTtlMs: { type: 'integer', minimum: 100, maximum: 600000 },
        commandTimeoutMs: { type: 'integer', minimum: 1, maximum: 60000 },
        maxCacheEntries: { type: 'integer', minimum: 0 },
        localCacheBytes: { type: 'integer', minimum: 0, maximum: 4294967296 },
        localCacheRecheckMs: { type: 'integer', minimum: 0, maximum: 3600000 },
      },
    },
    graphql: {
      type: 'object',
      additionalProperties: false,
      properties: {
        introspection: { type: 'boolean' },
        playground: { type: 'boolean' },
        maxDepth: { type: 'integer', minimum: 1 },
        maxAliases: { type: 'integer', minimum: 0 },
        maxFragmentSpreads: { type: 'integer', minimum: 0 },
        maxSelections: { type: 'integer', minimum: 1 },
        maxTokens: { type: 'integer', minimum: 1 },
        maxCost: { type: 'integer', minimum: 1 },
        defaultListSize: { type: 'integer', minimum: 0 },
        maxInputDepth: { type: 'integer', minimum: 1 },
        maxSubscriptionsPerSocket: { type: 'integer', minimum: 1 },
        shareSubscriptions: { type: 'boolean' },
        allowArbitraryOperationsInProduction: { type: 'boolean' },
        apq: { type: 'boolean' },
        apqMaxEntries: { type: 'integer', minimum: 1 },
        apqMaxDocumentBytes: { type: 'integer', minimum: 1 },
        batching: { type: 'object', additionalProperties: false, properties: { maxOperations: { type: 'integer', minimum: 0 } } },
      },
    },
    operations: {
      type: 'object',
      additionalProperties: false,
      properties: {
        dir: { type: 'string', minLength: 1 },
        liveIntervalMs: { type: 'integer', minimum: 10 },
        handlerTimeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
        maxCallDepth: { type: 'integer', minimum: 1, maximum: 64 },
        defaults: {
          type: 'object',
          additionalProperties: false,
          properties: {
            queries: {
              type: 'object',
              additionalProperties: false,
              properties: {
                authentication: { type: 'boolean' },
                cache: {
                  type: 'object',
                  required: ['maxAge'],
                  additionalProperties: false,
                  properties: {
                    maxAge: { type: 'integer', minimum: 0 },
                    staleWhileRevalidate: { type: 'integer', minimum: 0 },
                    public: { type: 'boolean' },
                    mustRevalidate: { type: 'boolean' },
                  },
                },
                live: { anyOf: [{ type: 'boolean' }, { type: 'object', additionalProperties: false, properties: { intervalMs: { type: 'integer', minimum: 10 } } }] },
              },
            },
            mutations: { type: 'object', additionalProperties: false, properties: { authentication: { type: 'boolean' } } },
            subscriptions: { type: 'object', additionalProperties: false, properties: { authentication: { type: 'boolean' } } },
          },
        },
      },
    },
    links: {
      type: 'array',
      items: {
        type: 'object',
        required: ['on', 'field', 'target'],
        additionalProperties: false,
        properties: {
          on: { type: 'string', pattern: name },
          field: { type: 'string', pattern: name, not: { pattern: '^__' } },
          target: { type: 'string', pattern: name },
          args: { type: 'object' },
          batch: {
            type: 'object',
            required: ['key', 'match'],
            additionalProperties: false,
            properties: {
              key: { type: 'string', pattern: name },
              match: { type: 'string', pattern: name },
              separator: { type: 'string', minLength: 1 },
              maxKeys: { type: 'integer', minimum: 1, maximum: 10000 },
              resultPath: { type: 'string', pattern: '^[_A-Za-z][_0-9A-Za-z]*(\\.[_A-Za-z][_0-9A-Za-z]*){0,15}$' },
            },
          },
          many: { type: 'boolean' },
          concurrency: { type: 'integer', minimum: 1, maximum: 64 },
          description: { type: 'string' },
        },
      },
    },
    routes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['method', 'path', 'operation'],
        additionalProperties: false,
        properties: {
          method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
          path: { type: 'string', pattern: '^/' },
          operation: { type: 'string', minLength: 1 },
        },
      },
    },
    services: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'script', 'url', 'readyUrl'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1 },
          script: { type: 'string', minLength: 1 },
          url: { type: 'string', pattern: '^https?://' },
          readyUrl: { type: 'string', pattern: '^https?://' },
          env: { type: 'object', additionalProperties: { type: 'string' } },
          readyTimeoutMs: { type: 'integer', minimum: 1 },
        },
      },
    },
    generatedDir: { type: 'string', minLength: 1 },
    codegen: { type: 'object', additionalProperties: false, properties: { react: { type: 'boolean' } } },
    permissions: {
      type: 'object',
      propertyNames: { pattern: '^[_A-Za-z][_0-9A-Za-z]*(\\.[_A-Za-z][_0-9A-Za-z]*)?$' },
      additionalProperties: {
        type: 'object',
        anyOf: [{ required: ['roles'] }, { required: ['filter'] }],
        additionalProperties: false,
        properties: {
          roles: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          filter: { type: 'object' },
          bypassRoles: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      properties: {
        graphql: { enum: ['public', 'authenticated'] },
        jwt: {
          type: 'object',
          additionalProperties: false,
          oneOf: [{ required: ['jwksUrl'], not: { required: ['secret'] } }, { required: ['secret'], not: { required: ['jwksUrl'] } }],
          properties: {
            jwksUrl: { type: 'string', pattern: '^https?://' },
            secret: { type: 'string', minLength: 32 },
            issuer: stringOrList,
            audience: stringOrList,
            rolesClaim: { type: 'string', minLength: 1 },
            cookie: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
            clockToleranceSec: { type: 'integer', minimum: 0, maximum: 3600 },
            requireExp: { type: 'boolean' },
            jwksCacheMaxAgeMs: { type: 'integer', minimum: 1000 },
            jwksCooldownMs: { type: 'integer', minimum: 0 },
            jwksTimeoutMs: { type: 'integer', minimum: 1 },
            maxTokenLength: { type: 'integer', minimum: 64, maximum: 65536 },
          },
        },
        oidc: {
          type: 'object',
          additionalProperties: false,
          required: ['providers', 'cookie'],
          properties: {
            providers: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['id', 'issuer', 'clientId', 'clientSecret'],
                properties: {
                  id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
                  // https, or http on a loopback host (development against a local provider).
                  issuer: { type: 'string', pattern: '^(https://|http://(localhost|127\\.0\\.0\\.1|\\[::1\\])([:/]|$))' },
                  clientId: { type: 'string', minLength: 1 },
                  clientSecret: { type: 'string', minLength: 1 },
                  scopes: { type: 'array', items: { type: 'string', pattern: '^[!#-\\[\\]-~]+$' } },
                  redirectUri: { type: 'string', pattern: '^https?://' },
                  fetchUserInfo: { type: 'boolean' },
                  keepAccessToken: { type: 'boolean' },
                },
              },
            },
            cookie: {
              type: 'object',
              additionalProperties: false,
              required: ['secrets'],
              properties: {
                name: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$" },
                secrets: { type: 'array', minItems: 1, items: { type: 'string', minLength: 32 } },
                secure: { type: 'boolean' },
                sameSite: { enum: ['strict', 'lax', 'none'] },
                maxAgeSeconds: { type: 'integer', minimum: 60, maximum: 31536000 },
                stateMaxAgeSeconds: { type: 'integer', minimum: 30, maximum: 3600 },
              },
            },
            redirectUris: { type: 'array', items: { type: 'string', pattern: '^https?://' } },
            rolesClaim: { type: 'string', minLength: 1 },
            maxParamLength: { type: 'integer', minimum: 256, maximum: 65536 },
            maxCookieLength: { type: 'integer', minimum: 1024, maximum: 16384 },
            timeoutMs: { type: 'integer', minimum: 1 },
            maxRevokedSessions: { type: 'integer', minimum: 100, maximum: 10000000 },
          },
        },
      },
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        // A path of its own: not one the gateway serves (/graphql, /operations/..., /health, /openapi.json).
        path: { type: 'string', pattern: '^/[A-Za-z0-9._~/-]*$', not: { pattern: '^/(graphql|operations|health|openapi\\.json)(/|$)' } },
        bearerToken: { type: 'string', minLength: 16 },
        allowedIps: { type: 'array', items: { type: 'string', pattern: '^([0-9]{1,3}(\\.[0-9]{1,3}){3}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$' } },
        eventLoopPrecisionMs: { type: 'integer', minimum: 1, maximum: 60000 },
      },
    },
    telemetry: {
      type: 'object',
      additionalProperties: false,
      properties: {
        otlpEndpoint: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$' },
        serviceName: { type: 'string', minLength: 1 },
        traceProbesAndAssets: { type: 'boolean' },
      },
    },
    ...eventTriggersSchema,
    console: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        roles: { type: 'array', items: { type: 'string', minLength: 1 } },
        adminSecret: { type: 'string', minLength: 16 },
      },
    },
    hooks: {
      type: 'object',
      additionalProperties: false,
      properties: {
        timeoutMs: { type: 'integer', minimum: 1, maximum: 60000 },
        operations: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            properties: {
              preResolve: fn,
              mutatingPreResolve: fn,
              customResolve: fn,
              postResolve: fn,
              mutatingPostResolve: fn,
              mockResolve: { type: 'object', required: ['handler'], additionalProperties: false, properties: { enabled: { type: 'boolean' }, handler: fn } },
            },
          },
        },
        global: {
          type: 'object',
          additionalProperties: false,
          properties: { onOriginRequest: originHook, onOriginResponse: originHook, onConnectionInit: originHook },
        },
        authentication: {
          type: 'object',
          additionalProperties: false,
          properties: { postAuthentication: fn, mutatingPostAuthentication: fn, revalidate: fn },
        },
      },
    },
  },
}

/**
 * The ajv instance of the config schema, with the `function` keyword (`{ function: true }`: the value
 * is a JavaScript function) as generated code, so that the validator can also be written as a module.
 */
function configAjv(source: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, ...(source ? { code: { source: true } } : {}) })
  ajv.addKeyword({
    keyword: 'function',
    schemaType: 'boolean',
    code: (cxt: KeywordCxt) => cxt.fail(cxt.schema ? _`typeof ${cxt.data} != "function"` : _`typeof ${cxt.data} == "function"`),
  })
  return ajv
}

/** SHA-256 of the config schema: a precompiled validator is used only when it was made from this very schema. */
const schemaHash = (): string => createHash('sha256').update(JSON.stringify(configSchema)).digest('hex')

/** The file name, beside this module, of the validator written at build time ({@link configValidatorModule}). */
export const CONFIG_VALIDATOR_FILE = 'config-validator.cjs'

/**
 * The config validator as a CommonJS module (ajv standalone code; it `require`s ajv's small runtime
 * helpers) whose `module.exports` is the validate function, with a `schemaHash` property (the SHA-256
 * of the schema it was made from). `scripts/build.mjs` writes it to
 * `dist/gateway/config/config-validator.cjs`, so that a built gateway does not compile the schema at
 * start-up (ajv's compilation of this schema is about a fifth of the demo's start-up CPU).
 */
export async function configValidatorModule(): Promise<string> {
  // A CommonJS module whose `module.exports` is the function (with `.default` pointing at itself).
  const standalone = (await import('ajv/dist/standalone/index.js')) as unknown as { default: (ajv: Ajv, validate: ValidateFunction) => string }
  const standaloneCode = standalone.default
  const ajv = configAjv(true)
  const code = standaloneCode(ajv, ajv.compile(configSchema))
  return `${code}\nmodule.exports.schemaHash = ${JSON.stringify(schemaHash())};\n`
}

let check: ValidateFunction | undefined

/** The module written at build time when it exists and was made from this schema, else a compilation (sources run by tsx, a stale file). */
function configCheck(): ValidateFunction {
  if (check) return check
  try {
    const built = createRequire(import.meta.url)(`./${CONFIG_VALIDATOR_FILE}`) as ValidateFunction & { schemaHash?: string }
    if (typeof built === 'function' && built.schemaHash === schemaHash()) return (check = built)
  } catch {
    // not built (the TypeScript sources): compiled below
  }
  return (check = compileConfigValidator())
}

/** Compiles the config schema (what a gateway run from its TypeScript sources does at its first validation). */
export function compileConfigValidator(): ValidateFunction {
  return configAjv(false).compile(configSchema)
}

/** Turns an ajv instance path (`/datasources/1/url`) into `datasources[1].url`. */
export function formatPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '')
}

function describe(err: ErrorObject): string {
  let path = formatPath(err.instancePath)
  let message = err.message ?? 'is invalid'
  if (err.keyword === 'additionalProperties') {
    const extra = (err.params as { additionalProperty: string }).additionalProperty
    path = path ? `${path}.${extra}` : extra
    message = 'is not a known option'
  } else if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty: string }).missingProperty
    path = path ? `${path}.${missing}` : missing
    message = missing === 'args' && /\.merge\.[^.]+\.args$/.test(path) ? 'is required with fieldName (or key and argsFromKeys, to batch)' : 'is required'
  } else if (err.keyword === 'function') {
    message = 'must be a function'
  } else if (err.keyword === 'enum') {
    message = `must be one of ${(err.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
  } else if (err.keyword === 'oneOf' && path.endsWith('jwt')) {
    message = 'give exactly one of jwksUrl or secret'
  } else if (err.keyword === 'oneOf' && /^events\[\d+\]\.deliver$/.test(path)) {
    message = 'must be { webhook: url } or { broker: namespace, subject, stream? }'
  } else if (err.keyword === 'not' && /^links\[\d+\]\.field$/.test(path)) {
    message = 'must not start with "__"'
  } else if (err.keyword === 'not' && path.endsWith('namespace')) {
    message = 'must not contain "__" or end with "_"'
  } else if (err.keyword === 'not' && /\.merge\.[^.]+$/.test(path)) {
    message = 'must not have both args (one call per object) and key (batched)'
  } else if (err.keyword === 'not' && path === 'metrics.path') {
    message = 'must not be a path the gateway serves (/graphql, /operations, /health, /openapi.json)'
  }
  return `${path || '(root)'}: ${message}`
}

/**
 * Checks a configuration object against the schema.
 * @throws ConfigInvalidError with the first error's path and message.
 */
export function validateConfig(input: unknown): void {
  const check = configCheck()
  if (check(input)) return
  // The branches of a `oneOf` each fail; the `oneOf` error itself says what is wrong.
  const errors = (check.errors ?? []).filter((e) => e.keyword !== 'if' && !/\/oneOf\/\d+\//.test(e.schemaPath))
  // Prefer the most specific error: the one with the longest path.
  errors.sort((a, b) => b.instancePath.length - a.instancePath.length)
  throw new ConfigInvalidError(errors.length ? describe(errors[0]) : 'invalid')
}
