-- Order A-1001 of customer 1 (one keyboard and two monitors: 49.5 + 2 × 189) written by another
-- program than the gateway; the trigger orderInserted delivers it to the webhook service.
-- psql postgres://postgres@127.0.0.1:5432/test -f examples/events/order.sql
insert into events_example.orders (id, customer_id, region, total) values ('A-1001', 1, 'eu', 427.5);
