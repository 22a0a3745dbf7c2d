/**
 * The users subgraph of the subgraphs example, an `@apollo/subgraph` service: `User` entities, and
 * `todo_Todo.assignee`, a field it adds to the Tributary subgraph's entity from the todo's
 * `assigneeId` (`@requires`: the router fetches it from Tributary first).
 */
import { buildSubgraphSchema } from '@apollo/subgraph'
import { parse, type GraphQLSchema } from 'graphql'

/** The users, by id. */
export const USERS = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
]

const typeDefs = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@external", "@requires"])

  type User @key(fields: "id") {
    id: Int!
    name: String!
  }

  type todo_Todo @key(fields: "id") {
    id: Int!
    assigneeId: Int @external
    assignee: User @requires(fields: "assigneeId")
  }

  type Query {
    users: [User!]!
  }
`)

/** The users subgraph's executable schema. */
export function usersSubgraph(): GraphQLSchema {
  return buildSubgraphSchema({
    typeDefs,
    resolvers: {
      Query: { users: () => USERS },
      User: { __resolveReference: (ref: { id: number }) => USERS.find((u) => u.id === ref.id) ?? null },
      todo_Todo: { assignee: (todo: { assigneeId?: number | null }) => USERS.find((u) => u.id === todo.assigneeId) ?? null },
    } as never,
  })
}
