// Non-JSON request bodies against real upstreams on 127.0.0.1: Swagger 2.0 Petstore's multipart
// uploadFile and form-encoded updatePetWithForm, a text/plain body (GitHub's POST /markdown/raw
// shape), XML, and raw bytes (application/octet-stream), retried PUTs resending the same bytes.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import { printSchema } from 'graphql'
import type { IncomingMessage } from 'node:http'
import { itemsSource, sendJson, startUpstream, testContext } from './helpers/rest-upstream.js'

const require = createRequire(import.meta.url)
const petstore2 = JSON.parse(readFileSync(join(require.resolve('@readme/oas-examples/package.json'), '..', '2.0', 'json', 'petstore.json'), 'utf8')) as Record<string, unknown>

interface Received { method: string; url: string; type: string; body: Buffer }

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

t.test('Swagger 2.0 Petstore: multipart uploadFile and form-encoded updatePetWithForm reach the upstream', async (t) => {
  const got: Received[] = []
  const up = await startUpstream(t, (req, res) => {
    void readBody(req).then((body) => {
      got.push({ method: req.method!, url: req.url!, type: String(req.headers['content-type']), body })
      if (req.url === '/v2/pet/7/uploadImage') return sendJson(res, 200, { code: 200, type: 'ok', message: 'uploaded' })
      res.writeHead(200).end()
    })
  })
  const source = await itemsSource(t, up, { baseUrl: `${up.url}/v2` }, testContext(t), petstore2)
  const sdl = printSchema(source.schema)
  t.match(sdl, /uploadFile\(\s*"""[^"]*"""\s*petId: BigInt!\s*input: UploadFileInput\s*\): ApiResponse/)
  t.match(sdl, /input UploadFileInput \{[^}]*file: Bytes/)
  t.match(sdl, /updatePetWithForm\(/)

  const file = Buffer.from([0, 1, 2, 250, 255, 10, 13])
  const result = await source.run(`mutation {
    uploadFile(petId: 7, input: { additionalMetadata: "a photo", file: "${file.toString('base64')}" }) { message }
    updatePetWithForm(petId: 7, input: { name: "Rex & co", status: "sold" })
  }`)
  t.same(result.errors, undefined)
  t.same(JSON.parse(JSON.stringify(result.data)), { uploadFile: { message: 'uploaded' }, updatePetWithForm: true })

  const upload = got.find((g) => g.url === '/v2/pet/7/uploadImage')!
  t.match(upload.type, /^multipart\/form-data; boundary=/)
  const form = await new Response(upload.body, { headers: { 'content-type': upload.type } }).formData()
  t.equal(form.get('additionalMetadata'), 'a photo')
  const part = form.get('file') as File
  t.equal(part.name, 'file')
  t.same(Buffer.from(await part.arrayBuffer()), file, 'the file bytes arrive unchanged')

  const update = got.find((g) => g.url === '/v2/pet/7')!
  t.equal(update.type, 'application/x-www-form-urlencoded')
  t.equal(update.body.toString(), 'name=Rex+%26+co&status=sold')
})

const text = (media: string) => ({ required: true, content: { [media]: { schema: { type: 'string' } } } })
const bodiesDocument = {
  openapi: '3.0.3',
  info: { title: 'bodies', version: '1' },
  paths: {
    '/markdown/raw': { post: { operationId: 'renderMarkdown', requestBody: text('text/plain'), responses: { 200: { description: 'html', content: { 'text/html': { schema: { type: 'string' } } } } } } },
    '/xml': { post: { operationId: 'postXml', requestBody: text('application/xml'), responses: { 204: { description: 'ok' } } } },
    '/blob/{id}': { put: { operationId: 'putBlob', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, responses: { 204: { description: 'ok' } } } },
  },
}

t.test('text/plain and XML bodies are String; octet-stream is Bytes sent raw, resent unchanged on retry', async (t) => {
  const got: Received[] = []
  const up = await startUpstream(t, (req, res, n) => {
    void readBody(req).then((body) => {
      got.push({ method: req.method!, url: req.url!, type: String(req.headers['content-type']), body })
      if (req.url === '/markdown/raw') return void res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>${body.toString()}</p>`)
      if (req.url === '/blob/b1' && n === 1) return sendJson(res, 503, { message: 'busy' })
      res.writeHead(204).end()
    })
  })
  const source = await itemsSource(t, up, { retry: { baseDelayMs: 5 } }, testContext(t), bodiesDocument)
  const sdl = printSchema(source.schema)
  t.match(sdl, /renderMarkdown\(input: String!\): String/)
  t.match(sdl, /postXml\(input: String!\): Boolean/)
  t.match(sdl, /putBlob\(id: String!, input: Bytes!\): Boolean/)

  const bytes = Buffer.from('\u0000binary\u00ff', 'latin1')
  const result = await source.run(`mutation {
    renderMarkdown(input: "Hello **world**")
    postXml(input: "<a>1</a>")
    putBlob(id: "b1", input: "${bytes.toString('base64')}")
  }`)
  t.same(result.errors, undefined)
  t.same(result.data, { renderMarkdown: '<p>Hello **world**</p>', postXml: true, putBlob: true })
  const md = got.find((g) => g.url === '/markdown/raw')!
  t.equal(md.type, 'text/plain')
  t.equal(md.body.toString(), 'Hello **world**')
  const xml = got.find((g) => g.url === '/xml')!
  t.equal(xml.type, 'application/xml')
  t.equal(xml.body.toString(), '<a>1</a>')
  const blobs = got.filter((g) => g.url === '/blob/b1')
  t.equal(blobs.length, 2, 'the PUT was retried once')
  for (const b of blobs) {
    t.equal(b.type, 'application/octet-stream')
    t.same(b.body, bytes, 'the same raw bytes each time')
  }
})

// Stripe's shape: every POST body is application/x-www-form-urlencoded with nested fields declared
// `style: deepObject, explode: true` in the media type's `encoding` (the real document does this for
// `metadata`, `expand`, `items`, ...).
const stripeDocument = {
  openapi: '3.0.0',
  info: { title: 'Stripe (shape)', version: '1' },
  paths: {
    '/v1/subscriptions': {
      post: {
        operationId: 'PostSubscriptions',
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              encoding: { expand: { explode: true, style: 'deepObject' }, items: { explode: true, style: 'deepObject' }, metadata: { explode: true, style: 'deepObject' }, tags: { explode: false, style: 'pipeDelimited' }, raw: { contentType: 'application/json' } },
              schema: {
                type: 'object',
                required: ['customer'],
                properties: {
                  customer: { type: 'string' },
                  expand: { type: 'array', items: { type: 'string' } },
                  items: { type: 'array', items: { type: 'object', properties: { price: { type: 'string' }, quantity: { type: 'integer' }, metadata: { type: 'object', additionalProperties: { type: 'string' } } } } },
                  metadata: { type: 'object', additionalProperties: { type: 'string' } },
                  tags: { type: 'array', items: { type: 'string' } },
                  raw: { type: 'object', properties: { a: { type: 'integer' } } },
                  shipping: { type: 'object', properties: { name: { type: 'string' }, phone: { type: 'string' } } },
                  channels: { type: 'array', items: { type: 'string' } },
                },
              },
            },
          },
        },
        responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' } } } } } } },
      },
    },
  },
}

t.test("Stripe-shaped form bodies honour the media type's encoding (deepObject, explode, style, contentType)", async (t) => {
  const got: Received[] = []
  const up = await startUpstream(t, (req, res) => {
    void readBody(req).then((body) => {
      got.push({ method: req.method!, url: req.url!, type: String(req.headers['content-type']), body })
      sendJson(res, 200, { id: 'sub_1' })
    })
  })
  const source = await itemsSource(t, up, {}, testContext(t), stripeDocument)
  const result = await source.run(`mutation { PostSubscriptions(input: {
    customer: "cus_1", expand: ["latest_invoice", "customer"],
    items: [{ price: "price_a", quantity: 2, metadata: { line: "1" } }, { price: "price_b" }],
    metadata: { order: "1", note: "a&b" }, tags: ["x", "y"], raw: { a: 3 },
    shipping: { name: "Ann", phone: "1" }, channels: ["web", "app"] }) { id } }`)
  t.same(result.errors, undefined)
  t.equal(got.length, 1)
  t.equal(got[0]!.type, 'application/x-www-form-urlencoded')
  const body = got[0]!.body.toString()
  t.equal(
    decodeURIComponent(body.replace(/\+/g, ' ')),
    'customer=cus_1&expand[]=latest_invoice&expand[]=customer&items[0][price]=price_a&items[0][quantity]=2&items[0][metadata][line]=1&items[1][price]=price_b'
      + '&metadata[order]=1&metadata[note]=a&b&tags=x|y&raw={"a":3}&name=Ann&phone=1&channels=web&channels=app',
    'deepObject in bracket notation, pipeDelimited, JSON by contentType; without encoding: form, explode (OpenAPI 3 defaults)',
  )
  t.match(body, /metadata%5Bnote%5D=a%26b/, 'names and values are percent-encoded')
})

t.test('HEAD operations are Query fields returning the status and headers (Kubernetes shape)', async (t) => {
  const got: string[] = []
  const up = await startUpstream(t, (req, res) => {
    got.push(`${req.method} ${req.url}`)
    res.writeHead(200, { 'content-type': 'application/json', etag: '"v7"', 'x-total': '3', 'set-cookie': 'session=secret' }).end()
  })
  const doc = {
    openapi: '3.0.0',
    info: { title: 'k8s (shape)', version: '1' },
    paths: { '/api/v1/pods/{name}': { head: { operationId: 'headPod', parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok' } } } } },
  }
  const source = await itemsSource(t, up, {}, testContext(t), doc)
  t.match(printSchema(source.schema), /type Query \{\s*headPod\(name: String!\): HeadResponse/)
  const result = await source.run('{ headPod(name: "web") { status headers } }')
  t.same(result.errors, undefined)
  const head = (result.data as { headPod: { status: number; headers: Record<string, string> } }).headPod
  t.equal(head.status, 200)
  t.match(head.headers, { etag: '"v7"', 'x-total': '3' })
  t.notOk('set-cookie' in head.headers, 'cookies are not handed to clients')
  t.same(got, ['HEAD /api/v1/pods/web'])
})
