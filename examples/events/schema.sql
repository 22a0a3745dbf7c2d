-- The example's tables (examples/events/README.md): customers and products in their own schema, and
-- the orders table the event trigger `orderInserted` watches (examples/events/config.ts `events`).
-- psql postgres://postgres@127.0.0.1:5432/test -f examples/events/schema.sql
create schema if not exists events_example;
drop table if exists events_example.orders, events_example.customer, events_example.product;
create table events_example.customer (id integer primary key, name text not null, email text not null, country text not null);
create table events_example.product (id integer primary key, name text not null, price double precision not null);
create table events_example.orders (id text primary key, customer_id integer not null references events_example.customer (id), region text not null, total double precision not null);
insert into events_example.customer values
  (1, 'Ada Lovelace', 'ada@example.com', 'GB'),
  (2, 'Grace Hopper', 'grace@example.com', 'US');
insert into events_example.product values
  (10, 'Keyboard', 49.5),
  (11, 'Mouse', 19.9),
  (12, 'Monitor', 189);
