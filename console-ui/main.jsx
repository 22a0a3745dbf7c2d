// The admin console's front-end (README "Admin console"): React 18, bundled by scripts/build-console.mjs
// (esbuild) into dist/gateway/http/console-assets/console.js. Hash routes: #/sources, #/schema,
// #/operations, #/traffic, #/graphiql, #/openapi. Data comes from /console/api/* (gateway/http/console.ts).
import React, { useCallback, useEffect, useState } from 'react'
import { createRoot } from 'react-dom/client'

const PAGES = [
  ['sources', 'Sources'],
  ['schema', 'Schema'],
  ['operations', 'Operations'],
  ['traffic', 'Traffic'],
  ['graphiql', 'GraphiQL'],
  ['openapi', 'OpenAPI'],
]

/** Credentials typed in the sign-in bar, kept for the tab only. */
function credentials() {
  return { secret: sessionStorage.getItem('tributary.adminSecret') || '', token: sessionStorage.getItem('tributary.token') || '' }
}

function authHeaders() {
  const { secret, token } = credentials()
  const h = {}
  if (secret) h['X-Tributary-Admin-Secret'] = secret
  if (token) h.Authorization = `Bearer ${token}`
  return h
}

class ApiError extends Error {
  constructor(status, body) {
    super(body?.errors?.[0]?.message || `HTTP ${status}`)
    this.status = status
    this.code = body?.errors?.[0]?.extensions?.code
  }
}

async function api(path) {
  const res = await fetch(`/console/api/${path}`, { headers: { accept: 'application/json', ...authHeaders() } })
  const body = await res.json().catch(() => null)
  if (!res.ok) throw new ApiError(res.status, body)
  return body
}

/** Loads `path` (again when `version` changes); `{ data, error, reload }`. */
function useApi(path, version = 0) {
  const [state, setState] = useState({ data: null, error: null })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    api(path).then((data) => live && setState({ data, error: null }), (error) => live && setState((s) => ({ data: s.data, error })))
    return () => { live = false }
  }, [path, version, tick])
  return { ...state, reload: useCallback(() => setTick((n) => n + 1), []) }
}

function useHashRoute() {
  const read = () => {
    const [page, ...rest] = location.hash.replace(/^#\/?/, '').split('/')
    return { page: PAGES.some(([p]) => p === page) ? page : 'sources', arg: decodeURIComponent(rest.join('/')) }
  }
  const [route, setRoute] = useState(read)
  useEffect(() => {
    const on = () => setRoute(read())
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return route
}

function ErrorBox({ error }) {
  if (!error) return null
  return <div className="error" role="alert">{error.code ? <b>{error.code}: </b> : null}{error.message}</div>
}

function SignIn({ onChange }) {
  const [secret, setSecret] = useState(credentials().secret)
  const [token, setToken] = useState(credentials().token)
  return (
    <form className="signin" onSubmit={(e) => {
      e.preventDefault()
      sessionStorage.setItem('tributary.adminSecret', secret)
      sessionStorage.setItem('tributary.token', token)
      onChange()
    }}>
      <span>Sign in:</span>
      <input type="password" placeholder="admin secret" value={secret} onChange={(e) => setSecret(e.target.value)} aria-label="admin secret" />
      <input type="password" placeholder="bearer token" value={token} onChange={(e) => setToken(e.target.value)} aria-label="bearer token" />
      <button type="submit">Use</button>
    </form>
  )
}

function Badge({ status }) {
  return <span className={`badge ${status}`}>{status}</span>
}

// ----- Sources -----

function SourcesPage({ version }) {
  const { data, error } = useApi('sources', version)
  return (
    <section>
      <h1>Sources</h1>
      <ErrorBox error={error} />
      {!data ? <p className="muted">Probing the sources…</p> : (
        <>
          <div className="cards">
            {data.sources.map((s) => (
              <article className="card source" key={s.name} data-source={s.name}>
                <header><h2>{s.name}</h2><Badge status={s.health.status} /></header>
                <dl>
                  <dt>Kind</dt><dd>{s.kind}</dd>
                  <dt>Namespace</dt><dd>{s.namespace || <i>none</i>}</dd>
                  <dt>URL</dt><dd><code>{s.url ?? '—'}</code></dd>
                  <dt>Probe latency</dt><dd>{s.health.latencyMs == null ? '—' : `${s.health.latencyMs} ms`}</dd>
                  <dt>Last error</dt><dd>{s.lastError ? `${s.lastError.message} (${s.lastError.at})` : 'none'}</dd>
                </dl>
                {['query', 'mutation', 'subscription'].map((k) => s.rootFields[k].length ? (
                  <details key={k}><summary>{s.rootFields[k].length} {k} fields</summary><ul className="names">{s.rootFields[k].map((f) => <li key={f}><code>{f}</code></li>)}</ul></details>
                ) : null)}
                <details><summary>{s.types.length} types</summary><ul className="names">{s.types.map((t) => <li key={t}><a href={`#/schema/${encodeURIComponent(s.namespace || s.name)}/${encodeURIComponent(t)}`}>{t}</a></li>)}</ul></details>
              </article>
            ))}
          </div>
          <h2>Links between sources</h2>
          {data.links.length === 0 ? <p className="muted">No links (README "Links").</p> : (
            <table><thead><tr><th>Type.field</th><th>From</th><th>Calls</th><th>Of</th></tr></thead>
              <tbody>{data.links.map((l) => <tr key={`${l.on}.${l.field}`}><td><code>{l.on}.{l.field}</code></td><td>{l.from}</td><td><code>{l.target}</code></td><td>{l.to}</td></tr>)}</tbody>
            </table>
          )}
        </>
      )}
    </section>
  )
}

// ----- Schema -----

function TypeDetail({ type }) {
  if (!type) return <p className="muted">Pick a type.</p>
  return (
    <div className="type-detail" data-type={type.name}>
      <h2>{type.name} <small className="muted">{type.kind}</small></h2>
      {type.description ? <p>{type.description}</p> : null}
      {type.values ? <p>Values: {type.values.map((v) => <code key={v}>{v} </code>)}</p> : null}
      {type.possibleTypes ? <p>One of: {type.possibleTypes.join(', ')}</p> : null}
      {type.fields.length ? (
        <table className="fields">
          <thead><tr><th>Field</th><th>Type</th><th>Column</th><th>Arguments</th><th>Description</th></tr></thead>
          <tbody>{type.fields.map((f) => (
            <tr key={f.name}>
              <td><code>{f.name}</code>{f.link ? <span className="tag">link → {f.link}</span> : null}</td>
              <td><code>{f.type}</code>{f.target && !f.link ? <span className="tag">relation</span> : null}</td>
              <td>{f.column ? <><code>{f.column}</code> <span className="muted">{f.dataType}</span></> : ''}</td>
              <td>{f.args.length ? f.args.map((a) => <div key={a.name}><code>{a.name}: {a.type}</code></div>) : ''}</td>
              <td>{f.description || ''}{f.deprecationReason ? <i> (deprecated: {f.deprecationReason})</i> : null}</td>
            </tr>
          ))}</tbody>
        </table>
      ) : null}
    </div>
  )
}

/** A graph of a source's object types and their relations and links: nodes on a circle, SVG edges. */
function TypeGraph({ types, onPick }) {
  const objects = types.filter((t) => t.kind === 'object' && !['Query', 'Mutation', 'Subscription'].includes(t.name) && !/(CountOutputType|AggregateOutputType|Aggregate|GroupBy|AvgAggregate|SumAggregate|MinAggregate|MaxAggregate|CountAggregate|BatchPayload)/.test(t.name))
  const n = objects.length
  if (!n) return <p className="muted">No object types.</p>
  const size = Math.max(420, Math.min(1100, 120 + n * 45))
  const r = size / 2 - 90
  const pos = new Map(objects.map((t, i) => [t.name, { x: size / 2 + r * Math.cos((2 * Math.PI * i) / n), y: size / 2 + r * Math.sin((2 * Math.PI * i) / n) }]))
  const edges = []
  for (const t of objects) for (const f of t.fields) {
    if (f.target && pos.has(f.target) && f.target !== t.name) edges.push({ from: t.name, to: f.target, link: !!f.link, key: `${t.name}.${f.name}` })
  }
  return (
    <svg className="graph" viewBox={`0 0 ${size} ${size}`} width={size} height={size} role="img" aria-label="type graph">
      <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#889" /></marker></defs>
      {edges.map((e) => {
        const a = pos.get(e.from), b = pos.get(e.to)
        return <line key={e.key} x1={a.x} y1={a.y} x2={b.x} y2={b.y} className={e.link ? 'edge link' : 'edge'} markerEnd="url(#arrow)"><title>{e.key}</title></line>
      })}
      {objects.map((t) => {
        const p = pos.get(t.name)
        return (
          <g key={t.name} className="node" transform={`translate(${p.x},${p.y})`} onClick={() => onPick(t.name)}>
            <rect x={-4 * t.shortName.length - 8} y={-12} width={8 * t.shortName.length + 16} height={24} rx={6} />
            <text textAnchor="middle" dy="4">{t.shortName}</text>
          </g>
        )
      })}
    </svg>
  )
}

function SchemaPage({ arg, version }) {
  const [ns, picked] = arg ? arg.split('/') : ['', '']
  const [query, setQuery] = useState('')
  const [debounced, setDebounced] = useState('')
  const [graph, setGraph] = useState(false)
  useEffect(() => {
    const t = setTimeout(() => setDebounced(query.trim()), 200)
    return () => clearTimeout(t)
  }, [query])
  const path = debounced ? `schema?q=${encodeURIComponent(debounced)}` : `schema${ns ? `?namespace=${encodeURIComponent(ns)}` : ''}`
  const { data, error } = useApi(path, version)
  const types = data?.types ?? []
  const selected = types.find((t) => t.name === picked) ?? (debounced ? types[0] : null)
  const pick = (name) => { location.hash = `#/schema/${encodeURIComponent(data?.namespace ?? ns)}/${encodeURIComponent(name)}`; setQuery('') }
  return (
    <section>
      <h1>Schema</h1>
      <ErrorBox error={error} />
      <div className="toolbar">
        <span>Source:</span>
        {(data?.namespaces ?? []).map((s) => (
          <a key={s.name} className={`pill${!debounced && (data?.source === s.name) ? ' active' : ''}`} href={`#/schema/${encodeURIComponent(s.namespace || s.name)}`}>{s.name}</a>
        ))}
        <input type="search" placeholder="Find a type (without its prefix: Track)" value={query} onChange={(e) => setQuery(e.target.value)} aria-label="search types" />
        {!debounced ? <label><input type="checkbox" checked={graph} onChange={(e) => setGraph(e.target.checked)} /> graph</label> : null}
      </div>
      {graph && !debounced ? <TypeGraph types={types} onPick={(n) => { setGraph(false); pick(n) }} /> : (
        <div className="split">
          <ul className="type-list" aria-label="types">
            {types.map((t) => <li key={t.name}><a className={selected?.name === t.name ? 'active' : ''} href={`#/schema/${encodeURIComponent(data?.namespace ?? ns)}/${encodeURIComponent(t.name)}`} onClick={() => setQuery('')}>{t.name}</a> <small className="muted">{t.kind}</small></li>)}
          </ul>
          <TypeDetail type={selected} />
        </div>
      )}
    </section>
  )
}

// ----- Operations -----

/** A form field for one variable, from its JSON Schema. */
function VariableInput({ name, schema, value, onChange, required }) {
  const type = Array.isArray(schema?.type) ? schema.type.find((t) => t !== 'null') : schema?.type
  const id = `var-${name}`
  let input
  if (Array.isArray(schema?.enum)) {
    input = <select id={id} value={value ?? ''} onChange={(e) => onChange(e.target.value || undefined)}><option value="">—</option>{schema.enum.filter((v) => v !== null).map((v) => <option key={String(v)} value={v}>{String(v)}</option>)}</select>
  } else if (type === 'boolean') {
    input = <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
  } else if (type === 'integer' || type === 'number') {
    input = <input id={id} type="number" step={type === 'integer' ? 1 : 'any'} value={value ?? ''} onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))} />
  } else if (type === 'string') {
    input = <input id={id} type="text" value={value ?? ''} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)} />
  } else {
    input = <textarea id={id} rows={3} placeholder="JSON" value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)} onChange={(e) => onChange(e.target.value === '' ? undefined : { json: e.target.value })} />
  }
  return <div className="var"><label htmlFor={id}><code>{name}</code>{required ? ' *' : ''} <span className="muted">{schema?.description ?? ''}</span></label>{input}</div>
}

function OperationsPage({ arg, version }) {
  const { data, error } = useApi('operations', version)
  const ops = data?.operations ?? []
  const op = ops.find((o) => o.name === arg) ?? ops[0]
  const [values, setValues] = useState({})
  const [answer, setAnswer] = useState(null)
  const [showOpenApi, setShowOpenApi] = useState(false)
  useEffect(() => { setValues(op ? { ...op.example } : {}); setAnswer(null) }, [op?.name])
  const run = async () => {
    const variables = {}
    try {
      for (const [k, v] of Object.entries(values)) {
        if (v === undefined) continue
        variables[k] = v && typeof v === 'object' && 'json' in v ? JSON.parse(v.json) : v
      }
    } catch (e) {
      setAnswer({ status: 'invalid JSON', body: String(e.message) })
      return
    }
    const { token } = credentials()
    const headers = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }
    let res
    const started = performance.now()
    if (op.method === 'GET') {
      const qs = new URLSearchParams(Object.entries(variables).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))
      res = await fetch(`${op.path}${qs.toString() ? `?${qs}` : ''}`, { headers })
    } else {
      res = await fetch(op.path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(variables) })
    }
    const text = await res.text()
    let body = text
    try { body = JSON.stringify(JSON.parse(text), null, 2) } catch { /* not JSON */ }
    setAnswer({ status: res.status, ms: Math.round(performance.now() - started), body })
  }
  const props = op?.variablesSchema?.properties ?? {}
  const required = new Set(op?.variablesSchema?.required ?? [])
  return (
    <section>
      <h1>Operations</h1>
      <ErrorBox error={error} />
      <div className="split">
        <ul className="type-list" aria-label="operations">
          {ops.map((o) => <li key={o.name}><a className={o.name === op?.name ? 'active' : ''} href={`#/operations/${encodeURIComponent(o.name)}`}>{o.name}</a> <small className="muted">{o.kind}</small></li>)}
        </ul>
        {op ? (
          <div className="operation" data-operation={op.name}>
            <h2><span className={`method ${op.method}`}>{op.method}</span> <code>{op.path}</code></h2>
            {op.routes.map((r) => <div key={`${r.method} ${r.path}`} className="muted">also <code>{r.method} {r.path}</code></div>)}
            <form className="vars" onSubmit={(e) => { e.preventDefault(); run() }}>
              {Object.keys(props).length === 0 ? <p className="muted">No variables.</p> : Object.entries(props).map(([name, schema]) => (
                <VariableInput key={name} name={name} schema={schema} required={required.has(name)} value={values[name]} onChange={(v) => setValues((s) => ({ ...s, [name]: v }))} />
              ))}
              <button type="submit" disabled={op.kind === 'subscription'}>Run</button>
              {op.kind === 'subscription' ? <span className="muted"> (a subscription: use curl, the client or GraphiQL)</span> : null}
            </form>
            {answer ? <div className="answer"><div>Answer: <b>{answer.status}</b>{answer.ms !== undefined ? ` in ${answer.ms} ms` : ''}</div><pre aria-label="answer">{answer.body}</pre></div> : null}
            <h3>curl</h3><pre className="copy">{op.curl}</pre>
            <h3>Typed client</h3><pre className="copy">{op.clientCall}</pre>
            {op.document ? <details><summary>Document</summary><pre>{op.document}</pre></details> : null}
            <details><summary>Variables JSON Schema</summary><pre>{JSON.stringify(op.variablesSchema, null, 2)}</pre></details>
          </div>
        ) : <p className="muted">No stored operations.</p>}
      </div>
      <h2>OpenAPI</h2>
      <p><a href="/openapi.json">/openapi.json</a> · <a href="#/openapi">open the viewer</a></p>
    </section>
  )
}

// ----- Traffic -----

function Sparkline({ values }) {
  const max = Math.max(1, ...values)
  const w = 120, h = 24
  const points = values.map((v, i) => `${(i / (values.length - 1)) * w},${h - (v / max) * (h - 2) - 1}`).join(' ')
  return <svg className="spark" width={w} height={h} viewBox={`0 0 ${w} ${h}`}><polyline points={points} /></svg>
}

function FiguresTable({ rows, label }) {
  if (!rows.length) return <p className="muted">Nothing in the window yet.</p>
  const ms = (v) => (v == null ? '—' : v < 10 ? v.toFixed(2) : Math.round(v))
  return (
    <table className="figures" aria-label={label}>
      <thead><tr><th>{label}</th><th>Requests</th><th>req/s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>Errors</th><th>Last 15 min</th></tr></thead>
      <tbody>{rows.map((r) => (
        <tr key={r.name}><td><code>{r.name}</code></td><td>{r.count}</td><td>{r.perSecond.toFixed(3)}</td><td>{ms(r.p50)}</td><td>{ms(r.p95)}</td><td>{ms(r.p99)}</td><td>{(r.errorRate * 100).toFixed(1)} %</td><td><Sparkline values={r.perMinute} /></td></tr>
      ))}</tbody>
    </table>
  )
}

function TrafficPage({ version }) {
  const { data, error, reload } = useApi('traffic', version)
  useEffect(() => {
    const t = setInterval(reload, 5000)
    return () => clearInterval(t)
  }, [reload])
  return (
    <section>
      <h1>Traffic <small className="muted">last {data?.windowMinutes ?? 15} minutes</small> <button onClick={reload}>Refresh</button></h1>
      <ErrorBox error={error} />
      {data ? (
        <>
          <h2>Per operation</h2><FiguresTable rows={data.operations} label="Operation" />
          <h2>Per source</h2><FiguresTable rows={data.sources} label="Source" />
          <h2>Last errors</h2>
          {data.errors.length === 0 ? <p className="muted">No errors.</p> : (
            <table aria-label="errors"><thead><tr><th>Time</th><th>Code</th><th>Error id</th><th>Operation</th><th>Path</th><th>Status</th><th>Message</th></tr></thead>
              <tbody>{data.errors.map((e, i) => <tr key={i}><td>{e.time}</td><td><code>{e.code}</code></td><td>{e.errorId ?? ''}</td><td>{e.operation}</td><td>{e.path ?? ''}</td><td>{e.status}</td><td>{e.message ?? ''}</td></tr>)}</tbody>
            </table>
          )}
        </>
      ) : null}
    </section>
  )
}

function FramePage({ src, title }) {
  return <iframe className="frame" src={src} title={title} />
}

function App() {
  const { page, arg } = useHashRoute()
  const [version, setVersion] = useState(0)
  const overview = useApi('overview', version)
  const denied = overview.error && (overview.error.status === 401 || overview.error.status === 403)
  return (
    <>
      <nav className="top">
        <a className="brand" href="#/sources">Tributary console</a>
        {PAGES.map(([p, label]) => <a key={p} href={`#/${p}`} className={page === p ? 'active' : ''}>{label}</a>)}
        <span className="grow" />
        {overview.data ? <span className="muted">{overview.data.mode} · {overview.data.sources} sources · {overview.data.operations} operations · {overview.data.types} types</span> : null}
        {overview.data?.urls.playground ? <a href="/graphql">Playground</a> : null}
      </nav>
      {denied || credentials().secret || credentials().token ? <SignIn onChange={() => setVersion((v) => v + 1)} /> : null}
      <main>
        {page === 'sources' ? <SourcesPage version={version} /> : null}
        {page === 'schema' ? <SchemaPage arg={arg} version={version} /> : null}
        {page === 'operations' ? <OperationsPage arg={arg} version={version} /> : null}
        {page === 'traffic' ? <TrafficPage version={version} /> : null}
        {page === 'graphiql' ? <FramePage src="/console/graphiql" title="GraphiQL" /> : null}
        {page === 'openapi' ? <FramePage src="/console/openapi" title="OpenAPI" /> : null}
      </main>
    </>
  )
}

createRoot(document.getElementById('root')).render(<App />)
