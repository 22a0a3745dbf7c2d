/**
 * The behaviours of the federation gateway audit (github graphql-hive/federation-gateway-audit) that
 * needed glue in Tributary (README "Apollo Federation subgraphs" → "Partial unions" and "Composition"),
 * on two real `@apollo/subgraph` servers on 127.0.0.1 composed in the gateway, one gateway for all:
 *
 * - partial unions below a shareable path (`partial-union-complex`, `partial-union`): the fields of a
 *   member that is not a member in every subgraph that may resolve the path are null, the members of a
 *   path only one subgraph resolves are kept (./gateway/connectors/federation/partial-unions.ts);
 * - the composition's workarounds (./gateway/connectors/federation/composition.ts): a field typed with a
 *   union member in one subgraph and the union in another is typed with the union (`union-intersection`);
 *   an `@interfaceObject`'s `@external` field that its `@requires` needs is sent in the representation
 *   (`interface-object-with-requires`); `@requires` with fragments composes (`requires-with-fragments`);
 *   another satisfiability error still fails the composition.
 */
import t from 'tap'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { parse } from 'graphql'
import { postGraphQL, startGateway, startGraphQLUpstream } from './helpers/graphql-upstream.js'
import { federation } from '../gateway/config/index.js'
import { composeWithGuild } from '../gateway/connectors/federation/composition.js'

const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.5", import: ["@key", "@shareable", "@external", "@requires", "@interfaceObject"])'
type Resolvers = Parameters<typeof buildSubgraphSchema>[0] extends infer A ? (A extends { resolvers?: infer R } ? R : never) : never
const subgraph = (typeDefs: string, resolvers: unknown) => buildSubgraphSchema({ typeDefs: parse(`${LINK}\n${typeDefs}`), resolvers: resolvers as Resolvers })

const common = { __typename: 'Common', label: 'common label' }
const onlyA = { __typename: 'OnlyA', a: 'only a' }
const onlyB = { __typename: 'OnlyB', b: 'only b' }
const book = { __typename: 'Book', id: 'b1', title: 'Dune' }
const users = [{ id: 'u1', name: 'ada', age: 36 }]
const entity = { id: 'e1', data: { __typename: 'Qux', foo: 'foo', bar: 'bar', qux: 'qux' } }
const byTypename = { __resolveType: (v: { __typename: string }) => v.__typename }

const FOO = `interface Foo { foo: String! }
  interface Bar implements Foo { foo: String! bar: String! }
  type Baz implements Foo & Bar @shareable { foo: String! bar: String! baz: String! }
  type Qux implements Foo & Bar @shareable { foo: String! bar: String! qux: String! }`

const A_SDL = `
  type Query {
    rootA: Container
    shared: Container @shareable
    soloA: Wrapper
    viewer: Viewer @shareable
    users: [NodeWithName!]!
    entityA: Entity
  }
  type Container @key(fields: "id") { id: ID! wrapper: Wrapper @shareable }
  type Wrapper @shareable { actions: [Action!]! @shareable }
  union Action = Common | OnlyA
  type Common @shareable { label: String }
  type OnlyA { a: String }

  union ViewerMedia = Book | Song
  type Book @key(fields: "id") { id: ID! title: String! @shareable }
  type Song @key(fields: "id") { id: ID! title: String! @shareable }
  type Viewer { book: Book @shareable }

  interface NodeWithName @key(fields: "id") { id: ID! name: String }
  type User implements NodeWithName @key(fields: "id") { id: ID! name: String age: Int }

  type Entity @key(fields: "id") { id: ID! data: Foo }
  ${FOO}`

const B_SDL = `
  type Query {
    shared: Container @shareable
    viewer: Viewer @shareable
  }
  type Container @key(fields: "id") { id: ID! wrapper: Wrapper @shareable bWrapper: Wrapper }
  type Wrapper @shareable { actions: [Action!]! @shareable }
  union Action = Common | OnlyB
  type Common @shareable { label: String }
  type OnlyB { b: String }

  union ViewerMedia = Book | Movie
  type Book @key(fields: "id") { id: ID! title: String! @shareable }
  type Movie @key(fields: "id") { id: ID! title: String! @shareable }
  type Viewer { book: ViewerMedia @shareable }

  type NodeWithName @key(fields: "id") @interfaceObject { id: ID! name: String @external username: String @requires(fields: "name") }

  type Entity @key(fields: "id") {
    id: ID!
    data: Foo @external
    requirer: String! @requires(fields: "data { foo ... on Bar { bar ... on Baz { baz } ... on Qux { qux } } }")
  }
  ${FOO}`

const aSchema = () =>
  subgraph(A_SDL, {
    Query: {
      rootA: () => ({ id: 'c1', actions: [common, onlyA] }),
      shared: () => ({ id: 'c1', actions: [common] }),
      soloA: () => ({ actions: [common, onlyA] }),
      viewer: () => ({ book }),
      users: () => users,
      entityA: () => entity,
    },
    Container: { __resolveReference: (r: { id: string }) => ({ ...r, actions: [common, onlyA] }), wrapper: (p: { actions: unknown[] }) => ({ actions: p.actions }) },
    Action: byTypename,
    ViewerMedia: byTypename,
    NodeWithName: { __resolveType: () => 'User', __resolveReference: (r: { id: string }) => users.find((u) => u.id === r.id) },
    User: { __resolveReference: (r: { id: string }) => users.find((u) => u.id === r.id) },
    Entity: { __resolveReference: () => entity },
    Foo: byTypename,
    Bar: byTypename,
  })

const bSchema = () =>
  subgraph(B_SDL, {
    Query: { shared: () => ({ id: 'c1', actions: [common] }), viewer: () => ({ book }) },
    Container: {
      __resolveReference: (r: { id: string }) => ({ ...r, actions: [common, onlyB] }),
      wrapper: (p: { actions: unknown[] }) => ({ actions: p.actions }),
      bWrapper: () => ({ actions: [common, onlyB] }),
    },
    Action: byTypename,
    ViewerMedia: byTypename,
    NodeWithName: { username: (p: { name?: string }) => (p.name === undefined ? null : `@${p.name}`) },
    Entity: {
      requirer: (p: { data?: { foo: string; bar?: string; qux?: string } }) => {
        if (!p.data) throw new Error('data not provided')
        return [p.data.foo, p.data.bar, p.data.qux].join('/')
      },
    },
    Foo: byTypename,
    Bar: byTypename,
  })

t.test('audit behaviours on subgraphs composed in the gateway', async (t) => {
  const a = await startGraphQLUpstream(t, aSchema())
  const b = await startGraphQLUpstream(t, bSchema())
  const { base } = await startGateway(t, { datasources: [federation({ subgraphs: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }] })] })
  const ACTIONS = 'actions { __typename ... on Common { label } ... on OnlyA { a } ... on OnlyB { b } }'

  t.test('partial unions: a member not common to the subgraphs that may resolve the path answers null', async (t) => {
    a.requests.length = 0
    t.same((await postGraphQL(base, `{ rootA { wrapper { ${ACTIONS} } } }`)).body, { data: { rootA: { wrapper: { actions: [common, { __typename: 'OnlyA', a: null }] } } } })
    t.notOk(
      a.dataRequests().some((r) => /on OnlyA\s*\{\s*a\b/.test(r.query)),
      'the member fragment is not sent to the subgraph',
    )
    t.same((await postGraphQL(base, 'fragment M on OnlyA { a } { rootA { wrapper { actions { __typename ...M } } } }')).body, { data: { rootA: { wrapper: { actions: [{ __typename: 'Common' }, { __typename: 'OnlyA', a: null }] } } } }, 'through a named fragment too')
    t.same((await postGraphQL(base, `{ shared { wrapper { ${ACTIONS} } } }`)).body, { data: { shared: { wrapper: { actions: [common] } } } })
  })

  t.test('partial unions: an entity hop to the only subgraph of a field, or a path only one subgraph resolves, keeps its members', async (t) => {
    t.same((await postGraphQL(base, `{ rootA { bWrapper { ${ACTIONS} } } }`)).body, { data: { rootA: { bWrapper: { actions: [common, onlyB] } } } })
    t.same((await postGraphQL(base, `{ soloA { ${ACTIONS} } }`)).body, { data: { soloA: { actions: [common, onlyA] } } })
  })

  t.test('a field typed with a union member in one subgraph and the union in another has the union type', async (t) => {
    const res = await postGraphQL(base, '{ viewer { book { __typename ... on Song { title } ... on Movie { title } ... on Book { title } } } }')
    t.same(res.body, { data: { viewer: { book: { __typename: 'Book', title: 'Dune' } } } })
    const intro = await postGraphQL(base, '{ __type(name: "Viewer") { fields { name type { name } } } }')
    t.same((intro.body.data as { __type: { fields: unknown[] } }).__type.fields, [{ name: 'book', type: { name: 'ViewerMedia' } }])
  })

  t.test("an interface object's @requires gets its @external field", async (t) => {
    t.same((await postGraphQL(base, '{ users { id name username } }')).body, { data: { users: [{ id: 'u1', name: 'ada', username: '@ada' }] } })
  })

  t.test('@requires with fragments on interfaces composes, and its representation carries the fragments\' fields', async (t) => {
    b.requests.length = 0
    t.same((await postGraphQL(base, '{ entityA { id requirer } }')).body, { data: { entityA: { id: 'e1', requirer: 'foo/bar/qux' } } }, 'the fields under fragments on an interface reach the requiring subgraph')
    t.same(b.dataRequests()[0]?.variables, { representations: [{ __typename: 'Entity', id: 'e1', data: { __typename: 'Qux', foo: 'foo', bar: 'bar', qux: 'qux' } }] })
  })
})

t.test('only the satisfiability errors of @requires with fragments skip the check', async (t) => {
  const unreachable = await composeWithGuild([
    { name: 'a', url: 'http://127.0.0.1:1/graphql', sdl: `${LINK} type Query { e: E } type E @key(fields: "id") { id: ID! }` },
    { name: 'b', url: 'http://127.0.0.1:2/graphql', sdl: `${LINK} type Query { f: F } type F { id: ID! } type E @key(fields: "id", resolvable: false) { id: ID! x: String }` },
  ])
  t.ok(unreachable.errors?.length, 'an unsatisfiable supergraph is still refused')
  t.match(unreachable.errors?.join('\n'), /cannot be satisfied/)
})
