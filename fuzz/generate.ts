/**
 * Random GraphQL requests for fuzzing the gateway: valid documents generated from a composed schema
 * (random root fields, arguments with edge values, nested selection sets, inline or as variables),
 * random textual mutations of them, and random variables for stored operations (`/operations/*`).
 *
 * Deterministic for a seed (mulberry32), so that a failure found by `npm run fuzz` can be replayed
 * with `--seed`.
 */
import {
  Kind,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  parse,
  print,
  visit,
  visitWithTypeInfo,
  TypeInfo,
  type GraphQLArgument,
  type GraphQLEnumType,
  type GraphQLInputObjectType,
  type GraphQLScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql'
import type { JsonSchema } from '../gateway/operations/json-schema.js'

/** A deterministic random source: `next()` is uniform in [0, 1). */
export interface Random {
  next(): number
  /** An integer in [0, n). */
  int(n: number): number
  pick<T>(items: readonly T[]): T
  chance(p: number): boolean
}

/** mulberry32: a small, fast, seedable PRNG (32-bit state). */
export function createRandom(seed: number): Random {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (p) => next() < p,
  }
}

/** Valid edge values by scalar name; anything else gets strings. */
const EDGE: Readonly<Record<string, readonly unknown[]>> = {
  Int: [0, 1, -1, 2, 42, 2147483647, -2147483648],
  Float: [0, -0.5, 3.14, 1e308, -1e-308, 2147483648],
  String: ['', 'a', 'Read', "' OR 1=1 --", 'x\u0000y', 'é😀', '%', '_', '\\', '"q"', 'Robert"); DROP TABLE Todo;--', 'x'.repeat(3000)],
  ID: ['1', '0', '-1', 'abc', ''],
  Boolean: [true, false],
  DateTime: ['2026-11-20T09:00:00.000Z', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '0001-01-01T00:00:00Z'],
  BigInt: ['9223372036854775807', '-9223372036854775808', '0', '99999999999999999999999', 12],
  Decimal: ['0.1', '1e400', '-0', '123456789012345678901234567890.123'],
  JSON: [{}, [], null, { a: [1, 2, { b: 'c' }] }, 'str', 1],
  Bytes: ['AAEC', '', 'aGVsbG8='],
}
/** Values the scalars should refuse, sent now and then. */
const INVALID: Readonly<Record<string, readonly unknown[]>> = {
  Int: [2147483648, 1.5, '7', -2147483649],
  Float: ['NaN', '1'],
  Boolean: ['true', 0],
  DateTime: ['not a date', '2026-13-45T99:99:99Z', 0],
  BigInt: ['abc', '1.5'],
  Decimal: ['abc', ''],
  Bytes: ['!!!notbase64'],
}
/** Probability of an invalid value where the scalar has some. */
const INVALID_RATE = 0.03
const OTHER_STRINGS = ['', 'x', '1', 'null', '{}', '\u0000', 'x'.repeat(500)]

/** Options of {@link createDocumentFuzzer}. */
export interface DocumentFuzzerOptions {
  /** Deepest selection set generated. Default 4. */
  maxDepth?: number
  /** Deepest input object generated for an argument. Default 3. */
  maxInputDepth?: number
  /** Probability of picking a Mutation root field when the schema has one. Default 0.25. */
  mutationRate?: number
  /** Root fields to leave out (e.g. raw SQL fields). Default none. */
  skipFields?: (name: string) => boolean
}

/** One POST /graphql body. */
export interface GraphQLRequestBody {
  query: string
  variables?: Record<string, unknown>
  operationName?: string
}

/**
 * Generates random, schema-valid GraphQL documents (valid shapes; argument values are edge values,
 * some of which the scalars refuse on purpose), and random textual mutations of them.
 */
export function createDocumentFuzzer(schema: GraphQLSchema, random: Random, options: DocumentFuzzerOptions = {}) {
  const maxDepth = options.maxDepth ?? 4
  const maxInputDepth = options.maxInputDepth ?? 3
  const mutationRate = options.mutationRate ?? 0.25
  const skip = options.skipFields ?? (() => false)
  const rootFields = (type: GraphQLObjectType | null | undefined) =>
    type ? Object.values(type.getFields()).filter((f) => !skip(f.name)) : []
  const queries = rootFields(schema.getQueryType())
  const mutations = rootFields(schema.getMutationType())

  function scalarValue(type: GraphQLScalarType | GraphQLEnumType): unknown {
    if (isEnumType(type)) {
      const values = type.getValues()
      return random.chance(0.99) && values.length ? { enum: random.pick(values).name } : 'NOT_A_VALUE'
    }
    const invalid = INVALID[type.name]
    if (invalid && random.chance(INVALID_RATE)) return random.pick(invalid)
    return random.pick(EDGE[type.name] ?? OTHER_STRINGS)
  }

  function inputValue(type: GraphQLInputType, depth: number): unknown {
    if (isNonNullType(type)) return inputValue(type.ofType, depth)
    if (isListType(type)) {
      const n = random.pick([0, 1, 2, 3])
      return Array.from({ length: n }, () => inputValue(type.ofType as GraphQLInputType, depth + 1))
    }
    if (isInputObjectType(type)) {
      if (depth >= maxInputDepth) return {}
      const out: Record<string, unknown> = {}
      const fields = Object.values(type.getFields())
      for (const f of fields) {
        if (isNonNullType(f.type) || random.chance(Math.min(0.6, 1.5 / fields.length))) out[f.name] = inputValue(f.type, depth + 1)
      }
      return out
    }
    return scalarValue(type as GraphQLScalarType | GraphQLEnumType)
  }

  /** Turns a generated value into a literal; `{ enum }` marks enum values. */
  function literal(value: unknown): ValueNode {
    if (value === null || value === undefined) return { kind: Kind.NULL }
    if (Array.isArray(value)) return { kind: Kind.LIST, values: value.map(literal) }
    if (typeof value === 'object') {
      const v = value as Record<string, unknown>
      if (typeof v.enum === 'string' && Object.keys(v).length === 1) return { kind: Kind.ENUM, value: v.enum }
      return {
        kind: Kind.OBJECT,
        fields: Object.entries(v).map(([name, field]) => ({ kind: Kind.OBJECT_FIELD, name: { kind: Kind.NAME, value: name }, value: literal(field) })),
      }
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return { kind: Kind.STRING, value: String(value) }
      return Number.isInteger(value) ? { kind: Kind.INT, value: String(value) } : { kind: Kind.FLOAT, value: String(value) }
    }
    if (typeof value === 'boolean') return { kind: Kind.BOOLEAN, value }
    return { kind: Kind.STRING, value: String(value) }
  }

  /** Turns a generated value into a JSON variable value. */
  function json(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(json)
    if (value && typeof value === 'object') {
      const v = value as Record<string, unknown>
      if (typeof v.enum === 'string' && Object.keys(v).length === 1) return v.enum
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, json(x)]))
    }
    return value
  }

  function document(): GraphQLRequestBody {
    const isMutation = mutations.length > 0 && random.chance(mutationRate)
    const pool = isMutation ? mutations : queries
    const variableDefs: string[] = []
    const variables: Record<string, unknown> = {}
    let varCount = 0

    function args(field: GraphQLField<unknown, unknown>): string {
      const parts: string[] = []
      for (const arg of field.args as readonly GraphQLArgument[]) {
        if (!isNonNullType(arg.type) && !random.chance(0.4)) continue
        const value = inputValue(arg.type, 0)
        if (random.chance(0.4)) {
          const name = `v${varCount++}`
          variableDefs.push(`$${name}: ${String(arg.type)}`)
          variables[name] = json(value)
          parts.push(`${arg.name}: $${name}`)
        } else {
          parts.push(`${arg.name}: ${print(literal(value))}`)
        }
      }
      return parts.length ? `(${parts.join(', ')})` : ''
    }

    function selection(type: GraphQLNamedType, depth: number): string {
      if (isLeafType(type)) return ''
      if (isUnionType(type) || isInterfaceType(type)) {
        const members = isUnionType(type) ? type.getTypes() : schema.getPossibleTypes(type)
        const inner = members.length ? `... on ${random.pick(members).name} ${selection(random.pick(members), depth)}` : ''
        return `{ __typename ${inner.includes('{') ? inner : ''} }`
      }
      const fields = Object.values((type as GraphQLObjectType).getFields())
      const leaves = fields.filter((f) => isLeafType(getNamedType(f.type)))
      const chosen = new Set<GraphQLField<unknown, unknown>>()
      if (leaves.length) chosen.add(random.pick(leaves))
      const n = 1 + random.int(4)
      for (let i = 0; i < n; i++) {
        const f = random.pick(fields)
        if (!isLeafType(getNamedType(f.type)) && depth >= maxDepth) continue
        chosen.add(f)
      }
      const parts = [...chosen].map((f) => {
        const alias = random.chance(0.1) ? `a${random.int(1000)}: ` : ''
        return `${alias}${f.name}${args(f)} ${selection(getNamedType(f.type as GraphQLOutputType), depth + 1)}`.trim()
      })
      if (!parts.length) parts.push('__typename')
      return `{ ${parts.join(' ')} }`
    }

    const roots: string[] = []
    const count = 1 + (random.chance(0.2) ? random.int(3) : 0)
    for (let i = 0; i < count && pool.length; i++) {
      const f = random.pick(pool)
      roots.push(`r${i}: ${f.name}${args(f)} ${selection(getNamedType(f.type), 1)}`.trim())
    }
    if (!roots.length) roots.push('__typename')
    const head = `${isMutation ? 'mutation' : 'query'} Fuzz${variableDefs.length ? `(${variableDefs.join(', ')})` : ''}`
    return { query: `${head} { ${roots.join(' ')} }`, ...(varCount ? { variables } : {}), operationName: 'Fuzz' }
  }

  /** Root fields with a `where` argument whose input type has `NOT`, and list fields with `take`/`skip`. */
  const whereFields = queries.filter((f) => f.args.some((a) => a.name === 'where' && isInputObjectType(getNamedType(a.type)) && 'NOT' in (getNamedType(a.type) as GraphQLInputObjectType).getFields()))
  const listFields = queries.filter((f) => f.args.some((a) => a.name === 'take'))

  function leafOf(field: GraphQLField<unknown, unknown>): string {
    const type = getNamedType(field.type)
    if (isLeafType(type)) return ''
    const leaf = Object.values((type as GraphQLObjectType).getFields()).find((f) => isLeafType(getNamedType(f.type)) && !f.args.length)
    return `{ ${leaf ? leaf.name : '__typename'} }`
  }

  /** A hostile document: a deep `NOT` chain, a huge `in` list, a huge or negative `take`/`skip` under many aliases. */
  function attack(): GraphQLRequestBody {
    const kind = random.int(4)
    if (kind <= 1 && whereFields.length) {
      const f = random.pick(whereFields)
      const whereType = getNamedType(f.args.find((a) => a.name === 'where')!.type) as GraphQLInputObjectType
      if (kind === 0) {
        const depth = random.pick([50, 200, 1000, 1500])
        return { query: `query Fuzz($w: ${whereType.name}) { ${f.name}(where: $w) ${leafOf(f)} }`, variables: { w: JSON.parse('{"NOT":'.repeat(depth) + '{}' + '}'.repeat(depth)) }, operationName: 'Fuzz' }
      }
      const intField = Object.values(whereType.getFields()).find((x) => getNamedType(x.type).name.startsWith('Int') && isInputObjectType(getNamedType(x.type)))
      if (intField) {
        const n = random.pick([1000, 40_000])
        return { query: `query Fuzz($w: ${whereType.name}) { ${f.name}(where: $w) ${leafOf(f)} }`, variables: { w: { [intField.name]: { in: Array.from({ length: n }, (_, i) => i) } } }, operationName: 'Fuzz' }
      }
    }
    if (listFields.length) {
      const f = random.pick(listFields)
      const take = random.pick([2147483647, -2147483648, 1000000])
      const skipArg = f.args.some((a) => a.name === 'skip') ? `, skip: ${random.pick([-1, 0, 2147483647])}` : ''
      const aliases = Array.from({ length: random.pick([1, 10, 30]) }, (_, i) => `a${i}: ${f.name}(take: ${take}${skipArg}) ${leafOf(f)}`)
      return { query: `query Fuzz { ${aliases.join(' ')} }`, operationName: 'Fuzz' }
    }
    return document()
  }

  const objectRoots = queries.filter((f) => isObjectType(getNamedType(f.type)) && !f.args.some((a) => isNonNullType(a.type)))
  const queryType = schema.getQueryType()?.name ?? 'Query'

  /**
   * A random document rewritten with named fragments (what clients such as Relay send): selection
   * sets become fragments on their type, spread once or twice, fragments spread fragments (nesting
   * as deep as the selections), and the root selection sometimes a fragment on the root type.
   */
  function fragmented(): GraphQLRequestBody {
    const base = document()
    let ast
    try {
      ast = parse(base.query)
    } catch {
      return base
    }
    const definitions: string[] = []
    const typeInfo = new TypeInfo(schema)
    const rewritten = visit(
      ast,
      visitWithTypeInfo(typeInfo, {
        SelectionSet: {
          leave(node: SelectionSetNode) {
            const type = typeInfo.getParentType()
            if (!type || !random.chance(0.6)) return undefined
            const name = `F${definitions.length}`
            definitions.push(`fragment ${name} on ${type.name} ${print(node)}`)
            const spread = { kind: Kind.FRAGMENT_SPREAD, name: { kind: Kind.NAME, value: name } } as const
            return { ...node, selections: random.chance(0.3) ? [spread, spread] : [spread] }
          },
        },
      }),
    )
    return { ...base, query: [print(rewritten), ...definitions].join('\n') }
  }

  /**
   * A hostile fragment structure: the doubling bomb (each fragment spreads the next one twice, 2^levels
   * copies) on an object type or on the root type, a cycle, a spread of an unknown fragment, or a
   * fragment on a type its spread cannot be.
   */
  function fragmentAttack(): GraphQLRequestBody {
    const kind = random.int(5)
    const f = objectRoots.length ? random.pick(objectRoots) : undefined
    if (kind <= 1 || !f) {
      const levels = random.pick([8, 16, 22, 40, 300])
      const onRoot = kind === 1 || !f
      const on = onRoot ? queryType : getNamedType(f!.type).name
      // The last fragment selects a leaf (free in the cost) or a costed object field.
      const leaf = onRoot ? (f ? `${f.name} ${leafOf(f)}` : '__typename') : random.chance(0.5) ? '__typename' : leafOf(f!).slice(2, -2)
      const fragments = Array.from({ length: levels }, (_, i) => `fragment T${i} on ${on} { ...T${i + 1} ...T${i + 1} }`)
      fragments.push(`fragment T${levels} on ${on} { ${leaf} }`)
      const root = onRoot ? '...T0' : `${f!.name} { ...T0 }`
      return { query: `query Fuzz { ${root} }\n${fragments.join('\n')}`, operationName: 'Fuzz' }
    }
    const type = getNamedType(f.type).name
    if (kind === 2) return { query: `query Fuzz { ${f.name} { ...C0 } }\nfragment C0 on ${type} { ...C1 __typename }\nfragment C1 on ${type} { ...C0 }`, operationName: 'Fuzz' }
    if (kind === 3) return { query: `query Fuzz { ${f.name} { ...Missing } }`, operationName: 'Fuzz' }
    return { query: `query Fuzz { ${f.name} { ...W } }\nfragment W on ${queryType} { __typename }`, operationName: 'Fuzz' }
  }

  return {
    /** A random schema-valid document with edge-value arguments. */
    document,
    attack,
    fragmented,
    fragmentAttack,
    /** A random document with a random textual mutation, or with its variables swapped for wrong ones. */
    mutated(): GraphQLRequestBody {
      const base = document()
      return mutateRequest(base, random)
    },
  }
}

const PUNCT = ['{', '}', '(', ')', '[', ']', ':', '$', '@', '!', '"', '\\', '...', '#', ',', '=', '|', '&']

/** Applies one random textual or variables mutation to a request body. */
export function mutateRequest(body: GraphQLRequestBody, random: Random): GraphQLRequestBody {
  const q = body.query
  const at = random.int(Math.max(1, q.length))
  switch (random.int(9)) {
    case 0: return { ...body, query: q.slice(0, at) + q.slice(at + 1 + random.int(8)) }
    case 1: return { ...body, query: q.slice(0, at) + random.pick(PUNCT) + q.slice(at) }
    case 2: return { ...body, query: q.slice(0, at) }
    case 3: return { ...body, query: q.slice(0, at) + q.slice(Math.max(0, at - 20), at) + q.slice(at) }
    case 4: return { ...body, query: q.replace(/\{/, '{'.repeat(1 + random.int(300))) }
    case 5: return { ...body, variables: { ...(body.variables ?? {}), [`extra${random.int(9)}`]: random.pick(OTHER_STRINGS) } }
    case 6: {
      const vars = Object.fromEntries(Object.keys(body.variables ?? {}).map((k) => [k, random.pick<unknown>([null, 'x', 1, [], {}, true, -1, 1e309])]))
      return { ...body, variables: vars }
    }
    case 7: return { ...body, query: q.replace(/\b(take|skip)\s*:\s*-?\d+/, `$1: ${random.pick([-1, -2147483648, 2147483647, 0])}`) }
    default: return { ...body, operationName: random.pick(['', 'Other', 'Fuzz', '__proto__']) }
  }
}

/** One random request to a stored operation: its method, a query string (GET) or a JSON body (POST). */
export interface OperationRequest {
  method: 'GET' | 'POST'
  /** `?a=1&b[c]=2`, or '' */
  search: string
  body?: string
}

function schemaValue(schema: JsonSchema | undefined, random: Random, depth: number): unknown {
  if (!schema || depth > 3) return random.pick(OTHER_STRINGS)
  if (random.chance(0.15)) return random.pick<unknown>([null, 'x', -1, 2147483648, 1e309, [], {}, true, ''])
  if (schema.enum && schema.enum.length) return random.pick(schema.enum as unknown[])
  if (schema.anyOf?.length) return schemaValue(random.pick(schema.anyOf), random, depth + 1)
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t) => t !== 'null')
  switch (types[0]) {
    case 'integer': return random.pick(EDGE.Int)
    case 'number': return random.pick(EDGE.Float)
    case 'boolean': return random.pick(EDGE.Boolean)
    case 'array': return Array.from({ length: random.int(4) }, () => schemaValue(schema.items, random, depth + 1))
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [k, s] of Object.entries(schema.properties ?? {})) if (random.chance(0.5)) out[k] = schemaValue(s, random, depth + 1)
      return out
    }
    default: return random.pick([...EDGE.String, ...EDGE.DateTime.filter((v) => typeof v === 'string')])
  }
}

/**
 * A random request for a stored operation with the given variables JSON Schema: edge values, wrong
 * types, unknown keys, bracket keys and empty values, as a query string or a JSON body.
 */
export function operationRequest(variablesSchema: JsonSchema, methods: readonly ('GET' | 'POST')[], random: Random): OperationRequest {
  const vars: Record<string, unknown> = {}
  for (const [k, s] of Object.entries(variablesSchema.properties ?? {})) if (random.chance(0.7)) vars[k] = schemaValue(s, random, 0)
  if (random.chance(0.1)) vars[random.pick(['unknown', 'a[b]', 'variables', 'live', 'x[]'])] = random.pick(OTHER_STRINGS)
  const method = random.pick(methods)
  if (method === 'POST') {
    const body = random.chance(0.05) ? random.pick(['{', '[]', '"x"', 'null', '{"a":', '1']) : JSON.stringify(vars)
    return { method, search: '', body }
  }
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(vars)) {
    if (Array.isArray(v) && random.chance(0.5)) for (const item of v) params.append(`${k}[]`, typeof item === 'string' ? item : JSON.stringify(item))
    else if (v && typeof v === 'object' && !Array.isArray(v) && random.chance(0.5)) {
      for (const [kk, vv] of Object.entries(v)) params.append(`${k}[${kk}]`, typeof vv === 'string' ? vv : JSON.stringify(vv))
    } else params.append(k, typeof v === 'string' ? v : JSON.stringify(v))
  }
  const search = params.toString()
  return { method, search: search ? `?${search}` : '' }
}

