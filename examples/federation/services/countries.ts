/**
 * The federation example's REST API (examples/federation/README.md): facts about the countries of
 * the Chinook customers. A fastify app whose OpenAPI 3 document is generated from its route schemas
 * by @fastify/swagger and served at `GET /openapi.json`.
 *
 * Routes:
 * - `GET /countries?names=Brazil,USA` (`listCountries`) → the named countries that exist, in the
 *   order asked (`names` is a comma-separated list; without it, every country);
 * - `GET /countries/{name}` (`getCountry`) → one country, or 404 `{ statusCode, error, message }`;
 * - `GET /openapi.json` → the OpenAPI 3.0 document, `servers[0].url` the address it listens on.
 *
 * As a script it listens on `COUNTRIES_PORT` (default 4011) at 127.0.0.1.
 */
import { listenIfMain } from './listen.js'
import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'

/** One country, as the API returns it. */
export interface Country {
  /** English short name, as Chinook spells it (`USA`, `United Kingdom`). */
  name: string
  capital: string
  /** ISO 4217 code. */
  currency: string
  /** Calling code, e.g. `+55`. */
  callingCode: string
}

const DATA: readonly [string, string, string, string][] = [
  ['Argentina', 'Buenos Aires', 'ARS', '+54'],
  ['Australia', 'Canberra', 'AUD', '+61'],
  ['Austria', 'Vienna', 'EUR', '+43'],
  ['Belgium', 'Brussels', 'EUR', '+32'],
  ['Brazil', 'Brasília', 'BRL', '+55'],
  ['Canada', 'Ottawa', 'CAD', '+1'],
  ['Chile', 'Santiago', 'CLP', '+56'],
  ['Czech Republic', 'Prague', 'CZK', '+420'],
  ['Denmark', 'Copenhagen', 'DKK', '+45'],
  ['Finland', 'Helsinki', 'EUR', '+358'],
  ['France', 'Paris', 'EUR', '+33'],
  ['Germany', 'Berlin', 'EUR', '+49'],
  ['Hungary', 'Budapest', 'HUF', '+36'],
  ['India', 'New Delhi', 'INR', '+91'],
  ['Ireland', 'Dublin', 'EUR', '+353'],
  ['Italy', 'Rome', 'EUR', '+39'],
  ['Netherlands', 'Amsterdam', 'EUR', '+31'],
  ['Norway', 'Oslo', 'NOK', '+47'],
  ['Poland', 'Warsaw', 'PLN', '+48'],
  ['Portugal', 'Lisbon', 'EUR', '+351'],
  ['Spain', 'Madrid', 'EUR', '+34'],
  ['Sweden', 'Stockholm', 'SEK', '+46'],
  ['USA', 'Washington, D.C.', 'USD', '+1'],
  ['United Kingdom', 'London', 'GBP', '+44'],
]
const COUNTRIES = new Map<string, Country>(DATA.map(([name, capital, currency, callingCode]) => [name, { name, capital, currency, callingCode }]))

const countrySchema = {
  $id: 'Country',
  type: 'object',
  description: 'A country.',
  required: ['name', 'capital', 'currency', 'callingCode'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', description: 'English short name, as Chinook spells it.' },
    capital: { type: 'string' },
    currency: { type: 'string', description: 'ISO 4217 code.' },
    callingCode: { type: 'string', description: 'International calling code, e.g. `+55`.' },
  },
} as const

/**
 * Builds the API. It does not listen: call `app.listen()` or use `app.inject()`.
 * @param options.delayMs wait this long before each answer (to observe concurrency in tests). Default 0.
 */
export async function createCountriesService(options: { delayMs?: number } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  const wait = () => (options.delayMs ? new Promise((r) => setTimeout(r, options.delayMs)) : undefined)
  app.addSchema(countrySchema)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Countries', description: 'Facts about the countries of the Chinook customers (Tributary federation example).', version: '1.0.0' },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })

  app.get<{ Querystring: { names?: string } }>('/countries', {
    schema: {
      operationId: 'listCountries',
      summary: 'Lists countries by name.',
      querystring: { type: 'object', properties: { names: { type: 'string', description: 'Comma-separated names; default every country.' } } },
      response: { 200: { description: 'The named countries that exist, in the order asked.', type: 'array', items: { $ref: 'Country#' } } },
    },
  }, async (req) => {
    await wait()
    if (req.query.names === undefined) return [...COUNTRIES.values()]
    return req.query.names.split(',').map((n) => COUNTRIES.get(n)).filter(Boolean)
  })

  app.get<{ Params: { name: string } }>('/countries/:name', {
    schema: {
      operationId: 'getCountry',
      summary: 'Finds one country by name.',
      params: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      response: {
        200: { description: 'The country.', $ref: 'Country#' },
        404: { description: 'No such country.', type: 'object', properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } } },
      },
    },
  }, async (req, reply) => {
    await wait()
    const c = COUNTRIES.get(req.params.name)
    if (!c) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `Country ${req.params.name} not found` })
    return c
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => {
    const doc = app.swagger() as unknown as Record<string, unknown>
    const address = app.server.address()
    const url = address && typeof address === 'object' ? `http://127.0.0.1:${address.port}` : 'http://127.0.0.1:4011'
    return { ...doc, servers: [{ url }] }
  })
  return app
}

await listenIfMain(import.meta.url, createCountriesService, 'COUNTRIES_PORT', 4011, 'countries API')
