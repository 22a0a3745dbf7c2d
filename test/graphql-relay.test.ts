/**
 * A remote GraphQL API whose Query has a field of type Query (GitHub's `relay: Query!`): the source's
 * root type is kept as a namespaced object type (`github_Query`) that resolves through the source.
 */
import t from 'tap'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { startGraphQLUpstream, startGateway, postGraphQL } from './helpers/graphql-upstream.js'

const schema = makeExecutableSchema({
  typeDefs: /* GraphQL */ `
    interface Node { id: ID! }
    type User implements Node { id: ID! login: String! }
    type Repository implements Node { id: ID! name: String! owner: User! }
    type Query {
      relay: Query!
      node(id: ID!): Node
      viewer: User!
      repository(name: String!): Repository
    }
  `,
  resolvers: {
    Query: {
      relay: () => ({}),
      node: (_: unknown, a: { id: string }) => (a.id === 'U1' ? { __typename: 'User', id: 'U1', login: 'octocat' } : a.id === 'R1' ? { __typename: 'Repository', id: 'R1', name: 'hello', owner: { id: 'U1', login: 'octocat' } } : null),
      viewer: () => ({ id: 'U1', login: 'octocat' }),
      repository: (_: unknown, a: { name: string }) => ({ id: 'R1', name: a.name, owner: { id: 'U1', login: 'octocat' } }),
    },
    Node: { __resolveType: (o: { __typename: string }) => o.__typename },
  },
})

t.test('a Query field of type Query (GitHub relay) composes and resolves through the source', async (t) => {
  const upstream = await startGraphQLUpstream(t, schema)
  const { base } = await startGateway(t, { datasources: [{ kind: 'graphql', namespace: 'github', url: upstream.url }] })
  const r = await postGraphQL(base, '{ github_relay { github_viewer { login } github_relay { github_node(id: "R1") { __typename id ... on github_Repository { name owner { login } } } } } github_viewer { id } }')
  t.same(r.body, { data: { github_relay: { github_viewer: { login: 'octocat' }, github_relay: { github_node: { __typename: 'github_Repository', id: 'R1', name: 'hello', owner: { login: 'octocat' } } } }, github_viewer: { id: 'U1' } } })
  const relayRequests = upstream.dataRequests().filter((q) => q.query.includes('relay'))
  t.equal(relayRequests.length, 1, 'the nested relay selection travels in the request of the field above it')
  t.match(relayRequests[0]!.query, /relay\s*\{[^]*viewer[^]*relay\s*\{[^]*node\(/, 'the source sees its own field names')
  const schemaText = await postGraphQL(base, '{ __type(name: "github_Query") { fields { name } } }')
  t.ok((schemaText.body.data!.__type as { fields: { name: string }[] }).fields.some((f) => f.name === 'github_node'), 'the namespaced copy of the source root carries node(id:)')
})
