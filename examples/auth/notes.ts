/**
 * The example's local schema: notes owned by users, and `me`, both reading `context.auth` (the
 * verified token, gateway/auth/jwt.ts).
 */
import { schema } from '../../gateway/config/index.js'

interface AuthContext {
  auth: { claims: { sub?: string; name?: string }; roles: readonly string[] } | null
}

const notes = [
  { id: '1', owner: 'alice', text: "Alice's first note", internal: 'reviewed' },
  { id: '2', owner: 'bob', text: "Bob's note", internal: 'flagged' },
  { id: '3', owner: 'alice', text: "Alice's second note", internal: 'none' },
]

export default schema({
  typeDefs: /* GraphQL */ `
    type Query {
      "The caller, from the token; null when anonymous."
      me: Me
      "The notes of one owner."
      notes(owner: String!): [Note!]!
      "Every note (see the @rbac operations)."
      allNotes: [Note!]!
    }
    type Me {
      sub: String
      name: String
      roles: [String!]!
    }
    type Note {
      id: ID!
      owner: String!
      text: String!
      "Readable by admins only (permissions in config.ts)."
      internal: String
    }
  `,
  resolvers: {
    Query: {
      me: (_: unknown, __: unknown, ctx: AuthContext) => (ctx.auth ? { sub: ctx.auth.claims.sub, name: ctx.auth.claims.name, roles: ctx.auth.roles } : null),
      notes: (_: unknown, args: { owner: string }) => notes.filter((n) => n.owner === args.owner),
      allNotes: () => notes,
    },
  },
})
