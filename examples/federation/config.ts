/**
 * The federation example (examples/federation/README.md): three sources of three kinds, linked to
 * each other (README "Links"):
 * - `chinook`: the Chinook SQLite database shipped in examples/chinook (`CHINOOK_DATABASE_URL` for another copy or engine);
 * - `geo`: a REST API with an OpenAPI document (./services/countries.ts), `COUNTRIES_API_URL`, default http://127.0.0.1:4011;
 * - `reviews`: a GraphQL API (./services/reviews.ts), `REVIEWS_API_URL`, default http://127.0.0.1:4012.
 * The two APIs are started as side services unless their URL already answers.
 *
 * Run it from the repository root:
 *   npm start -- --config examples/federation/config.ts
 */
import { fileURLToPath } from 'node:url'
import { database, defineConfig, graphql, rest } from '../../gateway/config/index.js'

const countriesPort = process.env.COUNTRIES_PORT || '4011'
const reviewsPort = process.env.REVIEWS_PORT || '4012'
const countriesUrl = process.env.COUNTRIES_API_URL || `http://127.0.0.1:${countriesPort}`
const reviewsUrl = process.env.REVIEWS_API_URL || `http://127.0.0.1:${reviewsPort}`
const script = (name: string) => fileURLToPath(new URL(`./services/${name}.js`, import.meta.url))
const serviceEnv = { LOG_LEVEL: process.env.LOG_LEVEL || 'warn' }

export default defineConfig({
  datasources: [
    database({ namespace: 'chinook', url: process.env.CHINOOK_DATABASE_URL || 'sqlite:examples/chinook/chinook.sqlite' }),
    rest({ namespace: 'geo', openapi: `${countriesUrl}/openapi.json` }),
    graphql({ namespace: 'reviews', url: `${reviewsUrl}/graphql` }),
  ],
  services: [
    { name: 'countries API', script: script('countries'), url: countriesUrl, readyUrl: `${countriesUrl}/openapi.json`, env: { ...serviceEnv, COUNTRIES_PORT: countriesPort } },
    { name: 'reviews API', script: script('reviews'), url: reviewsUrl, readyUrl: `${reviewsUrl}/graphql?query=%7B__typename%7D`, env: { ...serviceEnv, REVIEWS_PORT: reviewsPort } },
  ],
  links: [
    // database → REST: one GET /countries?names=a,b,c per level, whatever the number of customers.
    { on: 'chinook_Customer', field: 'countryInfo', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name' } },
    // database → GraphQL: one `reviews(albumIds: [...])` per level.
    { on: 'chinook_Album', field: 'reviews', target: 'reviews_reviews', args: { albumIds: '$keys' }, batch: { key: 'albumId', match: 'albumId' }, many: true },
    // GraphQL → database: one `findManyCustomer(where: { customerId: { in: [...] } })` per level.
    { on: 'reviews_Review', field: 'author', target: 'chinook_findManyCustomer', args: { where: { customerId: { in: '$keys' } } }, batch: { key: 'customerId', match: 'customerId' } },
    // GraphQL → database, not batched: one findUniqueAlbum per distinct album.
    { on: 'reviews_Review', field: 'album', target: 'chinook_findUniqueAlbum', args: { where: { albumId: '$parent.albumId' } } },
    // REST → database: the customers of each country, one statement per level.
    { on: 'geo_Country', field: 'customers', target: 'chinook_findManyCustomer', args: { where: { country: { in: '$keys' } } }, batch: { key: 'name', match: 'country' }, many: true },
  ],
  operations: { dir: 'examples/federation/operations' },
  generatedDir: 'examples/federation/generated',
})
