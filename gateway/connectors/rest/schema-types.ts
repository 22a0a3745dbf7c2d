/**
 * Schemas → GraphQL types, the half of the OpenAPI converter that types values (rules in
 * `convert.ts`'s header: "Schemas → types", "Names", "Nullability", "Composition"). A
 * {@link SchemaTypes} holds one document's types, made lazily and once per schema object: output
 * types (objects, unions with their member predicates, enums, scalars) and input types with the
 * {@link Codec} that turns a GraphQL input value back into the JSON the upstream expects. The
 * operations half (`convert.ts`) builds root fields on it; parameter and body serialization is
 * `serialize.ts`, document loading `load-document.ts`.
 */
import {
  GraphQLBoolean, GraphQLEnumType, GraphQLFloat, GraphQLInputObjectType, GraphQLInt, GraphQLList,
  GraphQLNonNull, GraphQLObjectType, GraphQLString, GraphQLUnionType, astFromValue,
  type GraphQLEnumValueConfigMap, type GraphQLFieldConfigMap, type GraphQLInputFieldConfigMap,
  type GraphQLInputType, type GraphQLNullableType, type GraphQLOutputType, type GraphQLScalarType,
} from 'graphql'
import { BigIntScalar, BytesScalar, DateTimeScalar, DecimalScalar, JSONScalar, fileInfoOf } from '../../scalars.js'
import { deref, isObject, type OpenApiDocument, type SchemaObject } from './openapi.js'

/** GraphQL input value → the JSON-ready value sent upstream (raw property names, enum raw values, scalars in wire form). */
export type Codec = (value: unknown) => unknown
type Predicate = (value: Record<string, unknown>) => boolean
interface Analysed { schema: SchemaObject | undefined; nullable: boolean }
type Kind = 'object' | 'array' | 'enum' | 'string' | 'integer' | 'number' | 'boolean' | 'union' | 'json'

const RESERVED = new Set(['Query', 'Mutation', 'Subscription', 'String', 'Int', 'Float', 'Boolean', 'ID', 'DateTime', 'JSON', 'BigInt', 'Decimal', 'Bytes'])
const INT32_MIN = -2147483648
const INT32_MAX = 2147483647
const identity: Codec = (v) => v

/** Replaces each run of characters outside `[_0-9A-Za-z]` by `_`, prefixes `_` to a leading digit, shortens a leading `__`. */
export function sanitizeName(raw: string): string {
  if (VALID_NAME.test(raw)) return raw // the common case, without the three rewrites
  let s = raw.replace(/[^_0-9A-Za-z]+/g, '_')
  if (s === '' || s === '_') return '_'
  if (/^[0-9]/.test(s)) s = `_${s}`
  if (s.startsWith('__')) s = s.replace(/^_+/, '_')
  return s
}

/** `get-all_roles` → `GetAllRoles`: splits on non-alphanumerics, upper-cases each part's first letter. */
export function pascalCase(raw: string): string {
  let out = pascalCases.get(raw)
  if (out === undefined) {
    const s = raw.split(/[^0-9A-Za-z]+/).filter(Boolean).map((p) => p[0]!.toUpperCase() + p.slice(1)).join('')
    out = sanitizeName(s === '' ? '_' : s)
    // Property names repeat across a document's schemas (`id`, `created_at`...); bounded for long-lived processes.
    if (pascalCases.size >= 10_000) pascalCases.clear()
    pascalCases.set(raw, out)
  }
  return out
}

/** {@link pascalCase}'s answers by input (pure), at most 10,000. */
const pascalCases = new Map<string, string>()

/** A GraphQL name that {@link sanitizeName} leaves as it is: valid, not starting with `__`. */
const VALID_NAME = /^(?:[A-Za-z]|_(?!_))[_0-9A-Za-z]*$/

function enumValueName(raw: string): string {
  if (raw === '') return '_EMPTY'
  const s = sanitizeName(raw)
  return s === 'true' || s === 'false' || s === 'null' ? `_${s}` : s
}

/** `base`, or `base2`, `base3`... the first not in `used`; adds it to `used`. */
export function unique(base: string, used: Set<string>): string {
  let name = base
  for (let i = 2; used.has(name); i++) name = `${base}${i}`
  used.add(name)
  return name
}

function stripInput(name: string): string {
  return name.endsWith('Input') && name.length > 5 ? name.slice(0, -5) : name
}

/** `v` when it is a string, else undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

/** A property's own description: an inline schema's, or the one written beside a `$ref` (3.1); a referenced type keeps its own. */
function propertyDescription(raw: SchemaObject | undefined, target: SchemaObject | undefined): string | undefined {
  if (isObject(raw) && typeof raw.$ref === 'string') return str(raw.description)
  return isObject(target) ? str(target.description) : undefined
}

/**
 * Input scalar value → JSON-ready value. Tolerates what graphql-jit makes of literals (it embeds
 * them as JSON: a Date becomes its ISO string, a Buffer `{ type: 'Buffer', data }`).
 */
function scalarCodec(type: GraphQLScalarType): Codec {
  if (type === BigIntScalar) return (v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : v)
  if (type === BytesScalar) {
    return (v) => {
      // An uploaded file stays a Buffer, so that a multipart body still sees its name and type (toJson and toText write it as base64).
      if (fileInfoOf(v)) return v
      if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('base64')
      if (isObject(v) && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data as number[]).toString('base64')
      return v
    }
  }
  if (type === DateTimeScalar) return (v) => (v instanceof Date ? v.toISOString() : v)
  return identity
}

/**
 * The types of one OpenAPI document (see the file header). Every method is memoised per schema
 * object, so a component used in many places is one type; `warnings` collects what was approximated.
 */
export class SchemaTypes {
  /** Parts of the document that were skipped or approximated, one sentence each. */
  protected readonly warnings: string[] = []
  protected readonly usedTypeNames = new Set<string>()
  protected readonly componentNames = new Set<string>()
  protected readonly componentOf = new Map<object, string>()
  protected readonly analysed = new WeakMap<object, Analysed>()
  protected readonly merged = new WeakMap<object, SchemaObject>()
  protected readonly outputs = new Map<object, GraphQLOutputType>()
  protected readonly inputs = new Map<object, { type: GraphQLInputType; codec: Codec }>()
  protected readonly enums = new Map<object, GraphQLEnumType>()
  protected readonly predicates = new Map<object, Predicate[]>()
  /** {@link inputCycleOf}: the strongly connected component of each input object schema searched so far. */
  protected readonly cycleComponent = new Map<object, number>()
  protected cycleComponents = 0

  /**
   * `<namespace>_` or `''`: put before the name of every type made here (never before the names that
   * are reserved, made unique and used as hints of nested names, which stay the document's own).
   */
  protected readonly prefix: string

  /**
   * @param namespace the source's namespace (`''` for none): the types are made with their public
   *   names `<namespace>_<Type>`, exactly those `compose/namespace.ts`'s `applyNamespace` would give.
   */
  constructor(protected readonly doc: OpenApiDocument, namespace = '') {
    this.prefix = namespace ? `${namespace}_` : ''
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      const target = deref<SchemaObject>(doc, schema)
      if (!isObject(target)) continue
      if (!this.componentOf.has(target)) this.componentOf.set(target, name)
      this.componentNames.add(sanitizeName(name))
    }
  }

  protected defaultFor(schema: SchemaObject | undefined, type: GraphQLInputType): unknown {
    if (!isObject(schema) || schema.default === undefined || schema.default === null) return undefined
    const d = schema.default
    if (typeof d !== 'string' && typeof d !== 'number' && typeof d !== 'boolean') return undefined
    if (type === BigIntScalar || type === DateTimeScalar || type === BytesScalar || type === JSONScalar) return undefined
    try {
      return astFromValue(d, type) ? d : undefined
    } catch {
      return undefined
    }
  }

  // ---------------------------------------------------------------- schema analysis

  protected derive(from: SchemaObject, patch: Partial<SchemaObject>): SchemaObject {
    const out = { ...from, ...patch }
    const comp = this.componentOf.get(from)
    if (comp !== undefined) this.componentOf.set(out, comp)
    return out
  }

  /** Resolves `$ref`s and nullability wrappers; the returned schema is identity-stable for caching. */
  protected analyse(input: SchemaObject | undefined, depth = 0): Analysed {
    if (input === undefined || input === null) return { schema: undefined, nullable: true }
    if (isObject(input) && typeof input.$ref === 'string' && !input.$ref.startsWith('#')) {
      this.warnings.push(`external $ref ${input.$ref} is not supported; typed as JSON`)
      return { schema: undefined, nullable: true }
    }
    const s = deref<SchemaObject>(this.doc, input)
    if (!isObject(s)) {
      if (isObject(input) && typeof input.$ref === 'string') this.warnings.push(`$ref ${input.$ref} cannot be resolved; typed as JSON`)
      return { schema: undefined, nullable: true }
    }
    const memo = this.analysed.get(s)
    if (memo) return memo
    if (depth > 32) return { schema: undefined, nullable: true }
    let nullable = s.nullable === true
    let schema: SchemaObject = s
    if (Array.isArray(s.type)) {
      const types = s.type.filter((t) => t !== 'null')
      if (types.length !== s.type.length) nullable = true
      schema = this.derive(schema, { type: types.length === 1 ? types[0] : types.length === 0 ? undefined : types })
    }
    if (Array.isArray(s.enum) && s.enum.includes(null)) {
      nullable = true
      schema = this.derive(schema, { enum: s.enum.filter((v) => v !== null) })
    }
    const structural = schema.type !== undefined || schema.properties !== undefined || schema.items !== undefined || schema.enum !== undefined
    for (const key of ['oneOf', 'anyOf'] as const) {
      const list = schema[key]
      if (!Array.isArray(list)) continue
      const members = list.filter((m) => {
        const t = deref<SchemaObject>(this.doc, m)
        const isNull = isObject(t) && (t.type === 'null' || (Array.isArray(t.enum) && t.enum.length === 1 && t.enum[0] === null))
        if (isNull) nullable = true
        return !isNull
      })
      if (members.length === 1 && !structural) {
        const inner = this.analyse(members[0], depth + 1)
        const result = { schema: inner.schema, nullable: nullable || inner.nullable }
        this.analysed.set(s, result)
        return result
      }
      if (members.length !== list.length) schema = this.derive(schema, { [key]: members })
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      if (schema.allOf.length === 1 && !structural && !schema.oneOf && !schema.anyOf) {
        const inner = this.analyse(schema.allOf[0], depth + 1)
        const result = { schema: inner.schema, nullable: nullable || inner.nullable }
        this.analysed.set(s, result)
        return result
      }
      schema = this.mergeAllOf(schema)
    }
    const result = { schema, nullable }
    this.analysed.set(s, result)
    return result
  }

  protected mergeAllOf(s: SchemaObject, seen: Set<object> = new Set()): SchemaObject {
    const memo = this.merged.get(s)
    if (memo) return memo
    seen.add(s)
    const out = this.derive(s, {})
    delete out.allOf
    const properties: Record<string, SchemaObject> = { ...(s.properties ?? {}) }
    const required = new Set(s.required ?? [])
    for (const raw of s.allOf ?? []) {
      const p0 = deref<SchemaObject>(this.doc, raw)
      if (!isObject(p0) || seen.has(p0)) continue
      const p = Array.isArray(p0.allOf) ? this.mergeAllOf(p0, seen) : p0
      for (const [k, v] of Object.entries(p.properties ?? {})) if (!(k in properties)) properties[k] = v
      for (const r of p.required ?? []) required.add(r)
      for (const key of ['type', 'format', 'items', 'enum', 'const', 'additionalProperties', 'description', 'discriminator', 'oneOf', 'anyOf'] as const) {
        if (out[key] === undefined && p[key] !== undefined) (out as Record<string, unknown>)[key] = p[key]
      }
      if (p.nullable === true && out.nullable === undefined) out.nullable = true
    }
    if (Object.keys(properties).length > 0) out.properties = properties
    if (required.size > 0) out.required = [...required]
    if (out.type === undefined && out.properties) out.type = 'object'
    this.merged.set(s, out)
    return out
  }

  protected kindOf(s: SchemaObject | undefined): Kind {
    if (!isObject(s)) return 'json'
    if (Array.isArray(s.type)) return 'json'
    const t = s.type
    const values = Array.isArray(s.enum) ? s.enum : s.const !== undefined ? [s.const] : undefined
    if (values && values.length > 0) {
      if (values.every((v) => typeof v === 'string')) return 'enum'
      if (values.every((v) => typeof v === 'number')) return values.every(Number.isInteger) && t !== 'number' ? 'integer' : 'number'
      if (values.every((v) => typeof v === 'boolean')) return 'boolean'
      return 'json'
    }
    if (t === undefined && (Array.isArray(s.oneOf) || Array.isArray(s.anyOf))) return 'union'
    if (t === 'object' || (t === undefined && isObject(s.properties))) {
      if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) return 'union'
      return isObject(s.properties) && Object.keys(s.properties).length > 0 ? 'object' : 'json'
    }
    if (t === 'array' || (t === undefined && s.items !== undefined)) return 'array'
    if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return t
    return 'json'
  }

  protected scalarFor(kind: 'string' | 'integer' | 'number' | 'boolean', s: SchemaObject): GraphQLScalarType {
    switch (kind) {
      case 'string':
        if (s.format === 'date-time') return DateTimeScalar
        if (s.format === 'byte' || s.format === 'binary') return BytesScalar
        if (s.format === 'decimal') return DecimalScalar
        return GraphQLString
      case 'integer':
        if (s.format === 'int64') return BigIntScalar
        if ((typeof s.minimum === 'number' && s.minimum < INT32_MIN) || (typeof s.maximum === 'number' && s.maximum > INT32_MAX)) return BigIntScalar
        return GraphQLInt
      case 'number':
        return GraphQLFloat
      case 'boolean':
        return GraphQLBoolean
    }
  }

  protected typeName(s: SchemaObject, hint: string, input = false): string {
    const comp = this.componentOf.get(s)
    if (comp !== undefined) {
      const base = sanitizeName(comp)
      if (!input) return this.claim(base, base)
      const candidate = base.endsWith('Input') ? base : `${base}Input`
      return this.claim(candidate, base)
    }
    return this.claim(sanitizeName(hint))
  }

  /** Reserves a type name; component names are kept for their own component (`own`). */
  protected claim(base: string, own?: string): string {
    let name = base
    for (let i = 2; RESERVED.has(name) || this.usedTypeNames.has(name) || (name !== own && this.componentNames.has(name)); i++) name = `${base}${i}`
    this.usedTypeNames.add(name)
    return name
  }

  protected enumFor(s: SchemaObject, hint: string): GraphQLEnumType {
    const cached = this.enums.get(s)
    if (cached) return cached
    const raw = (Array.isArray(s.enum) ? s.enum : [s.const]).filter((v): v is string => typeof v === 'string')
    const values: GraphQLEnumValueConfigMap = {}
    const used = new Set<string>()
    for (const v of new Set(raw)) values[unique(enumValueName(v), used)] = { value: v }
    const type = new GraphQLEnumType({ name: this.prefix + this.typeName(s, hint), description: typeof s.description === 'string' ? s.description : undefined, values })
    this.enums.set(s, type)
    return type
  }

  // ---------------------------------------------------------------- output types

  protected output(input: SchemaObject | undefined, hint: string): { type: GraphQLOutputType & GraphQLNullableType; nullable: boolean } {
    const { schema, nullable } = this.analyse(input)
    return { type: this.outputOf(schema, hint), nullable }
  }

  protected outputOf(s: SchemaObject | undefined, hint: string): GraphQLOutputType & GraphQLNullableType {
    if (!s) return JSONScalar
    const cached = this.outputs.get(s)
    if (cached) return cached as GraphQLOutputType & GraphQLNullableType
    const kind = this.kindOf(s)
    let type: GraphQLOutputType & GraphQLNullableType
    switch (kind) {
      case 'object':
        return this.objectFor(s, hint)
      case 'union':
        type = this.unionFor(s, hint)
        break
      case 'array': {
        const item = this.output(s.items, hint)
        type = new GraphQLList(item.nullable ? item.type : new GraphQLNonNull(item.type))
        break
      }
      case 'enum':
        type = this.enumFor(s, hint)
        break
      case 'json':
        type = JSONScalar
        break
      default:
        type = this.scalarFor(kind, s)
    }
    this.outputs.set(s, type)
    return type
  }

  protected objectFor(s: SchemaObject, hint: string): GraphQLObjectType {
    const cached = this.outputs.get(s)
    if (cached) return cached as GraphQLObjectType
    const name = this.typeName(s, hint)
    const preds: Predicate[] = []
    this.predicates.set(s, preds)
    const required = new Set(s.required ?? [])
    const type: GraphQLObjectType = new GraphQLObjectType({
      name: this.prefix + name,
      description: s.description,
      isTypeOf: (value) => isObject(value) && preds.every((p) => p(value)),
      fields: () => {
        const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
        const used = new Set<string>()
        for (const [prop, propSchema] of Object.entries(s.properties ?? {})) {
          const target = deref<SchemaObject>(this.doc, propSchema)
          if (isObject(target) && target.writeOnly === true) continue
          const fieldName = unique(sanitizeName(prop), used)
          const { type: t, nullable } = this.output(propSchema, `${name}${pascalCase(prop)}`)
          fields[fieldName] = {
            type: required.has(prop) && !nullable ? new GraphQLNonNull(t) : t,
            description: propertyDescription(propSchema, target),
            deprecationReason: isObject(target) && target.deprecated === true ? 'Deprecated in the OpenAPI document.' : undefined,
            ...(fieldName !== prop ? { resolve: (src: unknown) => (src as Record<string, unknown>)[prop] } : {}),
          }
        }
        if (Object.keys(fields).length === 0) fields._empty = { type: GraphQLBoolean, description: 'Placeholder: every property is write-only.', resolve: () => null }
        return fields
      },
    })
    this.outputs.set(s, type)
    return type
  }

  protected unionFor(s: SchemaObject, hint: string): GraphQLOutputType & GraphQLNullableType {
    const list = (s.oneOf ?? s.anyOf ?? []) as SchemaObject[]
    const members = list.map((m) => this.analyse(m).schema)
    const kinds = members.map((m) => this.kindOf(m))
    if (members.length === 0) return JSONScalar
    if (!kinds.every((k) => k === 'object')) {
      const first = kinds[0]!
      if ((first === 'string' || first === 'integer' || first === 'number' || first === 'boolean') && kinds.every((k) => k === first)) {
        const scalars = new Set(members.map((m) => this.scalarFor(first, m!)))
        if (scalars.size === 1) return [...scalars][0]!
      }
      return JSONScalar
    }
    const objects = [...new Set(members as SchemaObject[])]
    const preds = this.discriminate(s, objects)
    if (!preds) {
      this.warnings.push(`${hint}: oneOf/anyOf members cannot be told apart; typed as JSON`)
      return JSONScalar
    }
    const name = this.typeName(s, hint)
    const types = objects.map((m, i) => {
      const t = this.objectFor(m, `${name}${pascalCase(typeof m.title === 'string' ? m.title : `Option${i + 1}`)}`)
      this.predicates.get(m)!.push(preds[i]!)
      return t
    })
    return new GraphQLUnionType({ name: this.prefix + name, description: s.description, types })
  }

  /** One predicate per member telling its values apart, or undefined when the members are not discriminable. */
  protected discriminate(s: SchemaObject, members: SchemaObject[]): Predicate[] | undefined {
    const constsOf = (m: SchemaObject, prop: string): unknown[] => {
      const p = this.analyse(m.properties?.[prop]).schema
      if (!isObject(p)) return []
      if (p.const !== undefined) return [p.const]
      return Array.isArray(p.enum) ? p.enum : []
    }
    const prop = s.discriminator?.propertyName
    if (typeof prop === 'string') {
      const values = members.map((m) => {
        const out = new Set<unknown>(constsOf(m, prop))
        for (const [value, ref] of Object.entries(s.discriminator?.mapping ?? {})) {
          const target = ref.startsWith('#') ? deref<SchemaObject>(this.doc, { $ref: ref }) : deref<SchemaObject>(this.doc, { $ref: `#/components/schemas/${ref}` })
          if (target && this.analyse(target).schema === m) out.add(value)
        }
        const comp = this.componentOf.get(m)
        if (comp !== undefined && out.size === 0) out.add(comp)
        return out
      })
      if (values.every((v) => v.size > 0)) return values.map((v) => (value) => v.has(value[prop]))
    }
    // A property with a distinct const value in every member.
    const common = Object.keys(members[0]!.properties ?? {}).filter((k) => members.every((m) => m.properties && k in m.properties))
    for (const k of common) {
      const values = members.map((m) => constsOf(m, k))
      const flat = values.flat()
      if (values.every((v) => v.length > 0) && new Set(flat).size === flat.length) return values.map((v) => (value) => v.includes(value[k]))
    }
    // A required property unique to each member.
    const uniqueKeys = members.map((m, i) => (m.required ?? []).find((k) => members.every((o, j) => j === i || !(o.properties && k in o.properties))))
    if (uniqueKeys.every((k) => k !== undefined)) return uniqueKeys.map((k) => (value) => k! in value)
    // A unique property set: every member has properties no other member has. A value is the member
    // whose own properties it carries; one carrying none is any member that another's do not claim.
    const own = members.map((m, i) => Object.keys(m.properties ?? {}).filter((k) => members.every((o, j) => j === i || !(o.properties && k in o.properties))))
    if (own.every((keys) => keys.length > 0)) {
      return own.map((keys, i) => (value) => keys.some((k) => k in value) || !own.some((other, j) => j !== i && other.some((k) => k in value)))
    }
    return undefined
  }

  // ---------------------------------------------------------------- input types

  protected input(raw: SchemaObject | undefined, hint: string, topLevelBody = false): { type: GraphQLInputType & GraphQLNullableType; nullable: boolean; codec: Codec } {
    const { schema, nullable } = this.analyse(raw)
    const { type, codec } = this.inputOf(schema, hint, topLevelBody)
    return { type, nullable, codec }
  }

  protected inputOf(s: SchemaObject | undefined, hint: string, topLevelBody = false): { type: GraphQLInputType & GraphQLNullableType; codec: Codec } {
    if (!s) return { type: JSONScalar, codec: identity }
    const cached = this.inputs.get(s)
    if (cached) return cached as { type: GraphQLInputType & GraphQLNullableType; codec: Codec }
    const kind = this.kindOf(s)
    let result: { type: GraphQLInputType & GraphQLNullableType; codec: Codec }
    switch (kind) {
      case 'object':
        return this.inputObjectFor(s, topLevelBody ? hint : `${stripInput(hint)}Input`)
      case 'array': {
        const item = this.input(s.items, stripInput(hint))
        const codec: Codec = (v) => (Array.isArray(v) ? v.map((x) => (x === null ? null : item.codec(x))) : item.codec(v))
        result = { type: new GraphQLList(item.nullable ? item.type : new GraphQLNonNull(item.type)), codec }
        break
      }
      case 'enum':
        result = { type: this.enumFor(s, stripInput(hint)), codec: identity }
        break
      case 'union':
      case 'json':
        result = { type: JSONScalar, codec: identity }
        break
      default:
        const scalar = this.scalarFor(kind, s)
        result = { type: scalar, codec: scalarCodec(scalar) }
    }
    this.inputs.set(s, result)
    return result
  }

  protected inputObjectFor(s: SchemaObject, hint: string): { type: GraphQLInputObjectType; codec: Codec } {
    const name = this.typeName(s, hint, true)
    const mapping: Array<[gql: string, json: string, codec: Codec]> = []
    const required = new Set(s.required ?? [])
    const type = new GraphQLInputObjectType({
      name: this.prefix + name,
      description: s.description,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {}
        const used = new Set<string>()
        mapping.length = 0
        for (const [prop, propSchema] of Object.entries(s.properties ?? {})) {
          const target = deref<SchemaObject>(this.doc, propSchema)
          if (isObject(target) && target.readOnly === true) continue
          const fieldName = unique(sanitizeName(prop), used)
          // A property leading back into this type is JSON: no recursive input types (see header).
          const cycle = this.objectTargets(propSchema).some((child) => this.inputCycleOf(child) === this.inputCycleOf(s))
          const { type: t, nullable, codec } = cycle
            ? { type: JSONScalar, nullable: this.analyse(propSchema).nullable, codec: identity }
            : this.input(propSchema, `${stripInput(name)}${pascalCase(prop)}`)
          const hasDefault = isObject(target) && target.default !== undefined
          fields[fieldName] = {
            type: required.has(prop) && !nullable && !hasDefault ? new GraphQLNonNull(t) : t,
            description: propertyDescription(propSchema, target),
            defaultValue: this.defaultFor(target, t),
          }
          mapping.push([fieldName, prop, codec])
        }
        if (Object.keys(fields).length === 0) {
          fields._empty = { type: GraphQLBoolean, description: 'Placeholder: every property is read-only.' }
        }
        return fields
      },
    })
    const codec: Codec = (value) => {
      if (!isObject(value)) return value
      const out: Record<string, unknown> = {}
      for (const [gql, json, c] of mapping) {
        const v = value[gql]
        if (v !== undefined) out[json] = v === null ? null : c(v)
      }
      return out
    }
    const result = { type, codec }
    this.inputs.set(s, result)
    return result
  }

  /** The object schemas an input property holds: itself, or its (nested) array items. Unions and JSON hold none. */
  protected objectTargets(raw: SchemaObject | undefined, depth = 0): SchemaObject[] {
    const { schema } = this.analyse(raw)
    if (!schema || depth > 16) return []
    const kind = this.kindOf(schema)
    if (kind === 'object') return [schema]
    if (kind === 'array') return this.objectTargets(schema.items, depth + 1)
    return []
  }

  /**
   * The strongly connected component of `from` in the graph of input object schemas (an edge from a
   * schema to each object schema its non-read-only properties hold, through arrays): a property of
   * `s` holding `child` leads back into `s` exactly when both are in one component (`s` reaches
   * `child` by that property, so `child` reaches `s` iff they are strongly connected). Tarjan's
   * algorithm, iterative (no recursion on deep documents); each schema and edge is visited once per
   * document, where a search per property was quadratic in large documents (GitHub, Stripe).
   * @returns a component number, equal for schemas of one component.
   */
  protected inputCycleOf(from: SchemaObject): number {
    const known = this.cycleComponent.get(from)
    if (known !== undefined) return known
    const index = new Map<object, number>()
    const low = new Map<object, number>()
    const stack: SchemaObject[] = []
    const onStack = new Set<object>()
    const frames: Array<{ node: SchemaObject; edges: SchemaObject[]; next: number }> = []
    const visit = (node: SchemaObject) => {
      index.set(node, index.size)
      low.set(node, index.size - 1)
      stack.push(node)
      onStack.add(node)
      frames.push({ node, edges: this.inputEdges(node), next: 0 })
    }
    visit(from)
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!
      if (frame.next < frame.edges.length) {
        const child = frame.edges[frame.next++]!
        if (this.cycleComponent.has(child)) continue // a component closed before (this search or an earlier one)
        if (!index.has(child)) visit(child)
        else if (onStack.has(child)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!))
        continue
      }
      frames.pop()
      const parent = frames[frames.length - 1]
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = this.cycleComponents++
        let member: SchemaObject
        do {
          member = stack.pop()!
          onStack.delete(member)
          this.cycleComponent.set(member, component)
        } while (member !== frame.node)
      }
    }
    return this.cycleComponent.get(from)!
  }

  /** The object schemas the non-read-only properties of input schema `from` hold (through arrays): its edges in {@link inputCycleOf}'s graph. */
  protected inputEdges(from: SchemaObject): SchemaObject[] {
    const out: SchemaObject[] = []
    for (const propSchema of Object.values(from.properties ?? {})) {
      const target = deref<SchemaObject>(this.doc, propSchema)
      if (isObject(target) && target.readOnly === true) continue
      for (const child of this.objectTargets(propSchema)) out.push(child)
    }
    return out
  }
}
