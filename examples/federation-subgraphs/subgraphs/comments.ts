/**
 * The comments subgraph of the subgraphs example, an `@apollo/subgraph` service: comments on todos.
 * It adds `comments` to the Tributary subgraph's `todo_Todo` entity, and its `Comment.todo` returns
 * a `todo_Todo` reference that the router completes with one `_entities` request to Tributary.
 */
import { buildSubgraphSchema } from '@apollo/subgraph'
import { parse, type GraphQLSchema } from 'graphql'

/** The comments, newest first. */
export const COMMENTS = [
  { id: 'c3', body: 'Hive Gateway answered', todoId: 3 },
  { id: 'c2', body: 'It composes', todoId: 2 },
  { id: 'c1', body: 'Done, see the README', todoId: 1 },
]

const typeDefs = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

  type Comment {
    id: ID!
    body: String!
    todo: todo_Todo!
  }

  type todo_Todo @key(fields: "id") {
    id: Int!
    comments: [Comment!]!
  }

  type Query {
    latestComments: [Comment!]!
  }
`)

/** The comments subgraph's executable schema. */
export function commentsSubgraph(): GraphQLSchema {
  return buildSubgraphSchema({
    typeDefs,
    resolvers: {
      Query: { latestComments: () => COMMENTS },
      Comment: { todo: (c: { todoId: number }) => ({ __typename: 'todo_Todo', id: c.todoId }) },
      todo_Todo: {
        __resolveReference: (ref: { id: number }) => ref,
        comments: (todo: { id: number }) => COMMENTS.filter((c) => c.todoId === todo.id),
      },
    } as never,
  })
}
