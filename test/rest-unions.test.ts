// oneOf/anyOf of objects → GraphQL unions, resolved against a real upstream by discriminator, by
// required properties and by unique property sets; scalar members → the JSON fallback.
import t from 'tap'
import { printSchema } from 'graphql'
import { itemsSource, sendJson, startUpstream, testContext } from './helpers/rest-upstream.js'

const json = (schema: object) => ({ 200: { description: 'ok', content: { 'application/json': { schema } } } })
const document = {
  openapi: '3.1.0',
  info: { title: 'unions', version: '1' },
  paths: {
    '/payments': { get: { operationId: 'payments', responses: json({ type: 'array', items: { $ref: '#/components/schemas/Payment' } }) } },
    '/pets': { get: { operationId: 'pets', responses: json({ type: 'array', items: { $ref: '#/components/schemas/Pet' } }) } },
    '/shapes': { get: { operationId: 'shapes', responses: json({ type: 'array', items: { $ref: '#/components/schemas/Shape' } }) } },
    '/values': { get: { operationId: 'values', responses: json({ type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }, { type: 'array', items: { type: 'string' } }] } }) } },
  },
  components: {
    schemas: {
      // No discriminator, nothing required: told apart by their own property sets.
      Payment: { oneOf: [{ $ref: '#/components/schemas/Card' }, { $ref: '#/components/schemas/Bank' }] },
      Card: { type: 'object', properties: { cardNumber: { type: 'string' }, expiry: { type: 'string' }, holder: { type: 'string' } } },
      Bank: { type: 'object', properties: { iban: { type: 'string' }, holder: { type: 'string' } } },
      // A discriminator with a mapping.
      Pet: { oneOf: [{ $ref: '#/components/schemas/Cat' }, { $ref: '#/components/schemas/Dog' }], discriminator: { propertyName: 'kind', mapping: { kitty: '#/components/schemas/Cat', doggo: '#/components/schemas/Dog' } } },
      Cat: { type: 'object', required: ['kind'], properties: { kind: { type: 'string' }, meows: { type: 'boolean' } } },
      Dog: { type: 'object', required: ['kind'], properties: { kind: { type: 'string' }, barks: { type: 'integer' } } },
      // Required properties unique to each member.
      Shape: { anyOf: [{ $ref: '#/components/schemas/Circle' }, { $ref: '#/components/schemas/Square' }] },
      Circle: { type: 'object', required: ['radius'], properties: { radius: { type: 'number' }, label: { type: 'string' } } },
      Square: { type: 'object', required: ['side'], properties: { side: { type: 'number' }, label: { type: 'string' } } },
    },
  },
}

t.test('unions resolve their member by discriminator, required properties and unique property sets; scalar members are JSON', async (t) => {
  const up = await startUpstream(t, (req, res) => {
    if (req.url === '/payments') return sendJson(res, 200, [{ iban: 'NO93', holder: 'Ann' }, { cardNumber: '4111', holder: 'Bob' }, { holder: 'Cy' }])
    if (req.url === '/pets') return sendJson(res, 200, [{ kind: 'kitty', meows: true }, { kind: 'doggo', barks: 2 }])
    if (req.url === '/shapes') return sendJson(res, 200, [{ side: 2 }, { radius: 1, label: 'c' }])
    if (req.url === '/values') return sendJson(res, 200, ['a', 1, ['b']])
  })
  const source = await itemsSource(t, up, {}, testContext(t), document)
  const sdl = printSchema(source.schema)
  t.match(sdl, /union Payment = Card \| Bank/)
  t.match(sdl, /union Pet = Cat \| Dog/)
  t.match(sdl, /union Shape = Circle \| Square/)
  t.match(sdl, /values: \[JSON!\]/)

  const result = await source.run(`{
    payments { __typename ... on Card { cardNumber holder } ... on Bank { iban holder } }
    pets { __typename ... on Cat { meows } ... on Dog { barks } }
    shapes { __typename ... on Circle { radius label } ... on Square { side } }
    values
  }`)
  t.same(result.errors, undefined)
  t.same(JSON.parse(JSON.stringify(result.data)), {
    payments: [
      { __typename: 'Bank', iban: 'NO93', holder: 'Ann' },
      { __typename: 'Card', cardNumber: '4111', holder: 'Bob' },
      { __typename: 'Card', cardNumber: null, holder: 'Cy' },
    ],
    pets: [{ __typename: 'Cat', meows: true }, { __typename: 'Dog', barks: 2 }],
    shapes: [{ __typename: 'Square', side: 2 }, { __typename: 'Circle', radius: 1, label: 'c' }],
    values: ['a', 1, ['b']],
  })
  t.equal(up.total(), 4)
})
