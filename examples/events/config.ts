/**
 * The events example (examples/events/README.md): NATS as GraphQL, completed from PostgreSQL.
 * - `orders`: an events source over NATS (`NATS_URL`, default nats://127.0.0.1:4222): the
 *   subscription `orders_orderCreated(region)` reads `<prefix>.<region>.created` and the mutation
 *   `orders_createOrder(region, order)` publishes there (`EVENTS_SUBJECT_PREFIX`, default `shop`);
 * - `crm`: the PostgreSQL tables of ./schema.sql (`EVENTS_DATABASE_URL`, default
 *   postgres://postgres@127.0.0.1:5432/test; schema `EVENTS_DB_SCHEMA`, default `events_example`);
 * - two batched links complete each event: `customer` from its `customerId` and each line's
 *   `product` from its `productId` (one SQL statement per event and link, whatever the lines);
 * - one event trigger, `orderInserted`: each row inserted into the PostgreSQL table `orders` (by
 *   psql or through the gateway) is POSTed to the local webhook service ./webhook.mjs
 *   (`EVENTS_WEBHOOK_URL`, default http://127.0.0.1:4010/orders), retried a few times quickly.
 *
 * Run it from the repository root:
 *   npm start -- --config examples/events/config.ts
 */
import { fileURLToPath } from 'node:url'
import { database, defineConfig, events } from '../../gateway/config/index.js'

const prefix = process.env.EVENTS_SUBJECT_PREFIX || 'shop'

export default defineConfig({
  datasources: [
    database({
      namespace: 'crm',
      url: process.env.EVENTS_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
      schema: process.env.EVENTS_DB_SCHEMA || 'events_example',
    }),
    events({
      namespace: 'orders',
      broker: 'nats',
      url: process.env.NATS_URL || 'nats://127.0.0.1:4222',
      schema: `
        type Order { id: ID! customerId: Int! region: String! lines: [OrderLine!]! }
        type OrderLine { productId: Int! quantity: Int! }
        input OrderInput { id: ID! customerId: Int! region: String! lines: [OrderLineInput!]! }
        input OrderLineInput { productId: Int! quantity: Int! }
        type Query { ping: Boolean }
        type Subscription {
          "Orders created in a region; customerId (optional) keeps one customer's orders."
          orderCreated(region: String!, customerId: Int): Order! @subscribe(subjects: ["${prefix}.{args.region}.created"])
        }
        type Mutation {
          "Publishes an order on <prefix>.<order.region>.created."
          createOrder(region: String!, order: OrderInput!): PublishAck! @publish(subject: "${prefix}.{args.region}.created", payload: "order")
        }`,
    }),
  ],
  links: [
    { on: 'orders_Order', field: 'customer', target: 'crm_findManyCustomer', args: { where: { id: { in: '$keys' } } }, batch: { key: 'customerId', match: 'id' } },
    { on: 'orders_OrderLine', field: 'product', target: 'crm_findManyProduct', args: { where: { id: { in: '$keys' } } }, batch: { key: 'productId', match: 'id' } },
  ],
  events: [
    {
      name: 'orderInserted',
      source: 'crm',
      table: 'orders',
      on: ['insert'],
      deliver: { webhook: process.env.EVENTS_WEBHOOK_URL || 'http://127.0.0.1:4010/orders' },
      // Short retries for a demo: 5 after the first attempt, waiting 0.5–1 s, 1–2 s, 2–4 s, 4–8 s,
      // 4–8 s (half random), so about 12 to 23 s before the dead-letter table.
      retries: 5,
      backoff: { baseMs: 1000, maxMs: 8000 },
      timeoutMs: 5000,
    },
  ],
  operations: { dir: fileURLToPath(new URL('./operations', import.meta.url)) },
  generatedDir: process.env.EVENTS_GENERATED_DIR || 'examples/events/generated',
})
