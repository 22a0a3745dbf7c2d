/**
 * The federation example's GraphQL API (examples/federation/README.md): album reviews written by
 * Chinook customers, served by mercurius at `POST /graphql`.
 *
 * ```graphql
 * type Review { id: ID!  albumId: Int!  customerId: Int!  rating: Int!  text: String! }
 * type Query {
 *   reviews(albumIds: [Int!]): [Review!]!   # the reviews of these albums (every review without the argument)
 *   review(id: ID!): Review
 * }
 * ```
 * The reviews are fixed: albums 1 to 30 have `1 + albumId % 3` reviews each, by customers chosen
 * deterministically, so responses are stable. As a script it listens on `REVIEWS_PORT` (default 4012)
 * at 127.0.0.1.
 */
import { listenIfMain } from './listen.js'
import Fastify, { type FastifyInstance } from 'fastify'
import mercurius from 'mercurius'

/** One review. */
export interface Review {
  id: string
  albumId: number
  customerId: number
  rating: number
  text: string
}

const WORDS = ['Timeless', 'Loud and proud', 'A grower', 'Overrated', 'Flawless production', 'Skip track two']

/** Every review of the API. */
export const REVIEWS: readonly Review[] = (() => {
  const out: Review[] = []
  for (let albumId = 1; albumId <= 30; albumId++) {
    for (let k = 0; k <= albumId % 3; k++) {
      const n = out.length + 1
      out.push({ id: `r${n}`, albumId, customerId: ((albumId * 7 + k * 13) % 59) + 1, rating: ((albumId + k) % 5) + 1, text: WORDS[(albumId + k) % WORDS.length]! })
    }
  }
  return out
})()

const schema = `
  "A review of a Chinook album."
  type Review {
    id: ID!
    "The reviewed album (Chinook AlbumId)."
    albumId: Int!
    "The author (Chinook CustomerId)."
    customerId: Int!
    "1 to 5."
    rating: Int!
    text: String!
  }
  type Query {
    "The reviews of these albums, in review order; every review without the argument."
    reviews(albumIds: [Int!]): [Review!]!
    review(id: ID!): Review
  }
`

/**
 * Builds the API. It does not listen.
 * @param options.onRequest called with each GraphQL document received (tests check projection).
 */
export async function createReviewsService(options: { onRequest?: (query: string) => void } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  if (options.onRequest) {
    const seen = options.onRequest
    app.addHook('preHandler', async (req) => {
      const body = req.body as { query?: string } | undefined
      if (req.url.startsWith('/graphql') && body?.query) seen(body.query)
    })
  }
  await app.register(mercurius, {
    schema,
    resolvers: {
      Query: {
        reviews: (_: unknown, args: { albumIds?: number[] | null }) => {
          if (!args.albumIds) return REVIEWS
          const wanted = new Set(args.albumIds)
          return REVIEWS.filter((r) => wanted.has(r.albumId))
        },
        review: (_: unknown, args: { id: string }) => REVIEWS.find((r) => r.id === args.id) ?? null,
      },
    },
  })
  return app
}

await listenIfMain(import.meta.url, createReviewsService, 'REVIEWS_PORT', 4012, 'reviews API')
