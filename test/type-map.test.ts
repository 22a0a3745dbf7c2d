import t from 'tap'
import { mapColumnType, normalizeDataType } from '../gateway/connectors/database/type-map.js'
import type { Dialect, ScalarKind } from '../gateway/connectors/database/model.js'

type Case = [string, ScalarKind, boolean?]

const cases: Record<Dialect, Case[]> = {
  sqlite: [
    ['INTEGER', 'Int'], ['int', 'Int'], ['tinyint', 'Int'], ['smallint', 'Int'], ['mediumint', 'Int'], ['int2', 'Int'],
    ['BIGINT', 'BigInt'], ['int8', 'BigInt'], ['unsigned big int', 'BigInt'],
    ['real', 'Float'], ['float', 'Float'], ['double', 'Float'], ['DOUBLE PRECISION', 'Float'],
    ['numeric(10,2)', 'Decimal'], ['decimal(5)', 'Decimal'], ['NUMERIC', 'Decimal'],
    ['boolean', 'Boolean'], ['BOOL', 'Boolean'],
    ['text', 'String'], ['varchar(255)', 'String'], ['NVARCHAR(160)', 'String'], ['character(20)', 'String'],
    ['varying character(10)', 'String'], ['clob', 'String'], ['uuid', 'String'], ['native character(70)', 'String'],
    ['date', 'DateTime'], ['datetime', 'DateTime'], ['timestamp', 'DateTime'], ['time', 'DateTime'],
    ['timestamp with time zone', 'DateTime'], ['datetime(3)', 'DateTime'],
    ['json', 'JSON'], ['jsonb', 'JSON'],
    ['blob', 'Bytes'], ['BLOB', 'Bytes'], ['bytea', 'Bytes'], ['varbinary(16)', 'Bytes'],
    // affinity fallbacks (sqlite.org/datatype3.html §3.1)
    ['unsigned integer', 'Int'], ['point', 'Int'], ['my_text_type', 'String'], ['longblob', 'Bytes'], ['floating', 'Float'],
    ['weird_type', 'String', true], ['', 'String', true], ['money', 'String', true],
  ],
  postgres: [
    ['smallint', 'Int'], ['integer', 'Int'], ['int', 'Int'], ['int2', 'Int'], ['int4', 'Int'], ['serial', 'Int'], ['smallserial', 'Int'],
    ['bigint', 'BigInt'], ['int8', 'BigInt'], ['bigserial', 'BigInt'],
    ['real', 'Float'], ['double precision', 'Float'], ['float4', 'Float'], ['float8', 'Float'],
    ['numeric(10,2)', 'Decimal'], ['numeric', 'Decimal'], ['decimal', 'Decimal'],
    ['boolean', 'Boolean'], ['bool', 'Boolean'],
    ['text', 'String'], ['character varying(120)', 'String'], ['character(13)', 'String'], ['bpchar', 'String'], ['uuid', 'String'],
    ['citext', 'String'], ['name', 'String'], ['inet', 'String'], ['money', 'String'], ['xml', 'String'],
    ['date', 'DateTime'], ['time without time zone', 'DateTime'], ['time with time zone', 'DateTime'],
    ['timestamp without time zone', 'DateTime'], ['timestamp(3) with time zone', 'DateTime'], ['timestamptz', 'DateTime'],
    ['json', 'JSON'], ['jsonb', 'JSON'],
    ['bytea', 'Bytes'],
    ['point', 'String', true], ['tsvector', 'String', true], ['interval', 'String', true], ['integer[]', 'Int'], ['text[][]', 'String'], ['point[]', 'String', true], ['mood', 'String', true],
  ],
  mysql: [
    ['int(11)', 'Int'], ['int', 'Int'], ['integer', 'Int'], ['tinyint(4)', 'Int'], ['tinyint', 'Int'], ['smallint(6)', 'Int'], ['mediumint(9)', 'Int'],
    ['smallint(5) unsigned', 'Int'], ['year(4)', 'Int'],
    ['bigint(20)', 'BigInt'], ['bigint(20) unsigned', 'BigInt'], ['int(10) unsigned', 'Int'], ['int unsigned zerofill', 'Int'], ['mediumint unsigned', 'Int'], ['serial', 'BigInt'],
    ['float', 'Float'], ['double', 'Float'], ['float(8,2)', 'Float'],
    ['decimal(10,2)', 'Decimal'], ['numeric(10,2)', 'Decimal'],
    ['tinyint(1)', 'Boolean'], ['TINYINT(1) UNSIGNED', 'Boolean'], ['boolean', 'Boolean'],
    ['varchar(160)', 'String'], ['char(13)', 'String'], ['text', 'String'], ['longtext', 'String'], ["set('a','b')", 'String'],
    ['date', 'DateTime'], ['datetime', 'DateTime'], ['datetime(3)', 'DateTime'], ['timestamp', 'DateTime'], ['time', 'DateTime'],
    ['json', 'JSON'],
    ['blob', 'Bytes'], ['longblob', 'Bytes'], ['varbinary(16)', 'Bytes'], ['binary(16)', 'Bytes'], ['bit(8)', 'Bytes'],
    ["enum('happy','sad')", 'Enum'], ["ENUM('a')", 'Enum'],
    ['geometry', 'String', true], ['point', 'String', true],
  ],
}

for (const [dialect, list] of Object.entries(cases) as [Dialect, Case[]][]) {
  t.test(dialect, async (t) => {
    for (const [type, scalar, unknown] of list) {
      const got = mapColumnType(dialect, type)
      t.equal(got.scalar, scalar, `${dialect} ${JSON.stringify(type)} -> ${scalar}`)
      t.equal(got.unknownType === true, unknown === true, `${dialect} ${JSON.stringify(type)} unknownType=${unknown === true}`)
    }
  })
}

t.test('PostgreSQL arrays are lists of their element type', async (t) => {
  for (const type of ['integer[]', 'text[][]', 'point[]']) t.equal(mapColumnType('postgres', type).list, true, `${type} is a list`)
  t.equal(mapColumnType('postgres', 'integer').list, undefined, 'integer is not a list')
})

t.test('normalizeDataType', async (t) => {
  t.equal(normalizeDataType('VARCHAR(255)'), 'varchar')
  t.equal(normalizeDataType('timestamp(3)  WITH time zone'), 'timestamp with time zone')
  t.equal(normalizeDataType('int(10) unsigned zerofill'), 'int unsigned')
  t.equal(normalizeDataType('numeric(10, 2)'), 'numeric')
})

t.test('never throws on odd input', async (t) => {
  for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
    for (const type of ['', '   ', '(((', 'enum(', '[]', 'a'.repeat(1000)]) {
      t.doesNotThrow(() => mapColumnType(dialect, type))
      t.equal(typeof mapColumnType(dialect, type).scalar, 'string')
    }
  }
})
