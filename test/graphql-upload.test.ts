// File uploads through the GraphQL multipart request spec on POST /graphql, over real HTTP, into a
// REST source's octet-stream and multipart bodies on a real upstream; and the hostile inputs
// (no CSRF preflight header, __proto__ paths, batches, too many files, too large, other routes).
import type { IncomingMessage } from 'node:http'
import t from 'tap'
import { startRestGateway, startUpstream, testContext } from './helpers/rest-upstream.js'

const document = {
  openapi: '3.0.3',
  info: { title: 'files', version: '1' },
  paths: {
    '/blob/{id}': { put: { operationId: 'putBlob', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, responses: { 204: { description: 'ok' } } } },
    '/avatar': { put: { operationId: 'putAvatar', requestBody: { required: true, content: { 'image/*': { schema: { type: 'string', format: 'binary' } } } }, responses: { 204: { description: 'ok' } } } },
    '/photos': { post: { operationId: 'postPhotos', requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object', properties: { caption: { type: 'string' }, photos: { type: 'array', items: { type: 'string', format: 'binary' } } } } } } }, responses: { 204: { description: 'ok' } } } },
  },
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

t.test('uploads reach REST bodies; hostile multipart requests are refused with 400/413/415', async (t) => {
  const got: Array<{ url: string; type: string; body: Buffer }> = []
  const up = await startUpstream(t, (req, res) => {
    void readBody(req).then((body) => {
      got.push({ url: req.url!, type: String(req.headers['content-type']), body })
      res.writeHead(204).end()
    })
  })
  const url = await startRestGateway(t, up, { context: testContext(t), namespace: 'files', document, bodyLimit: 64 * 1024 })

  const send = (form: FormData, headers: Record<string, string> = { 'apollo-require-preflight': 'true' }, path = '/graphql') => fetch(`${url}${path}`, { method: 'POST', body: form, headers })
  const upload = (operations: unknown, map: unknown, files: Record<string, Buffer>) => {
    const form = new FormData()
    form.set('operations', JSON.stringify(operations))
    form.set('map', JSON.stringify(map))
    for (const [k, v] of Object.entries(files)) form.set(k, new Blob([v]), `${k}.bin`)
    return form
  }

  const bytes = Buffer.from([0, 255, 1, 254, 10, 13, 0])
  const one = await send(upload({ query: 'mutation ($f: Bytes!) { files_putBlob(id: "b", input: $f) }', variables: { f: null } }, { 0: ['variables.f'] }, { 0: bytes }))
  t.equal(one.status, 200)
  t.same(await one.json(), { data: { files_putBlob: true } })
  t.same(got.at(-1)!.body, bytes, 'the raw bytes reach the upstream')
  t.equal(got.at(-1)!.type, 'application/octet-stream')

  const two = await send(upload(
    { query: 'mutation ($in: files_PostPhotosInput!) { files_postPhotos(input: $in) }', variables: { in: { caption: 'cats', photos: [null, null] } } },
    { a: ['variables.in.photos.0'], b: ['variables.in.photos.1'] },
    { a: Buffer.from('first'), b: Buffer.from('second') },
  ))
  t.same(await two.json(), { data: { files_postPhotos: true } })
  const form = await new Response(got.at(-1)!.body, { headers: { 'content-type': got.at(-1)!.type } }).formData()
  t.equal(form.get('caption'), 'cats')
  t.same(await Promise.all((form.getAll('photos') as File[]).map(async (f) => Buffer.from(await f.arrayBuffer()).toString())), ['first', 'second'], 'both files as parts of the upstream multipart body')
  // The part headers as the upstream's multipart parser reads them (RFC 7578 §4.2, §4.4).
  const parts = (body: Buffer) => body.toString('latin1').split(/\r\n--/).map((p) => p.split('\r\n\r\n')[0]!).filter((h) => /content-disposition/i.test(h))
  const partOf = (name: string, body: Buffer) => parts(body).filter((h) => h.includes(`name="${name}"`))
  t.match(partOf('photos', got.at(-1)!.body)[0], /filename="a\.bin"\r\nContent-Type: application\/octet-stream/i, 'a file sent without a type stays octet-stream, with its own name')

  const named = new FormData()
  named.set('operations', JSON.stringify({ query: 'mutation ($in: files_PostPhotosInput!) { files_postPhotos(input: $in) }', variables: { in: { caption: 'pets', photos: [null, null] } } }))
  named.set('map', JSON.stringify({ a: ['variables.in.photos.0'], b: ['variables.in.photos.1'] }))
  named.set('a', new Blob([Buffer.from([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'cat.png')
  named.set('b', new Blob(['%PDF-1.7'], { type: 'application/pdf' }), 'report 2026.pdf')
  t.same(await (await send(named)).json(), { data: { files_postPhotos: true } })
  const photos = partOf('photos', got.at(-1)!.body)
  t.equal(photos.length, 2)
  t.match(photos[0], /filename="cat\.png"\r\nContent-Type: image\/png/i, 'the first file keeps its name and type')
  t.match(photos[1], /filename="report 2026\.pdf"\r\nContent-Type: application\/pdf/i, 'the second file keeps its name and type')
  const received = await new Response(got.at(-1)!.body, { headers: { 'content-type': got.at(-1)!.type } }).formData()
  const cat = received.getAll('photos')[0] as File
  t.same([cat.name, cat.type, Buffer.from(await cat.arrayBuffer())], ['cat.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47])], 'the upstream reads the file as uploaded')

  // A base64 variable (no upload) keeps the old naming: the property, octet-stream.
  const plain = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'mutation ($in: files_PostPhotosInput!) { files_postPhotos(input: $in) }', variables: { in: { photos: [Buffer.from('x').toString('base64')] } } }) })
  t.same(await plain.json(), { data: { files_postPhotos: true } })
  t.match(partOf('photos', got.at(-1)!.body)[0], /filename="photos"\r\nContent-Type: application\/octet-stream/i)

  // A raw body declared as image/* goes out as the uploaded file's own type.
  const avatar = new FormData()
  avatar.set('operations', JSON.stringify({ query: 'mutation ($f: Bytes!) { files_putAvatar(input: $f) }', variables: { f: null } }))
  avatar.set('map', JSON.stringify({ 0: ['variables.f'] }))
  avatar.set('0', new Blob([Buffer.from('GIF89a')], { type: 'image/gif' }), 'me.gif')
  t.same(await (await send(avatar)).json(), { data: { files_putAvatar: true } })
  t.same([got.at(-1)!.url, got.at(-1)!.type, got.at(-1)!.body.toString()], ['/avatar', 'image/gif', 'GIF89a'])
  const before = got.length

  const expectBad = async (res: Response, status: number, message: RegExp, label: string) => {
    t.equal(res.status, status, label)
    const body = await res.json() as { code?: string; message?: string; error?: { code?: string; message?: string } }
    t.match(JSON.stringify(body), message, label)
  }
  const valid = () => upload({ query: 'mutation ($f: Bytes!) { files_putBlob(id: "b", input: $f) }', variables: { f: null } }, { 0: ['variables.f'] }, { 0: bytes })
  await expectBad(await send(valid(), {}), 400, /CSRF/, 'no preflight header')
  await expectBad(await send(upload({ query: 'mutation ($f: Bytes!) { files_putBlob(id: "b", input: $f) }', variables: { f: null } }, { 0: ['variables.__proto__.polluted'] }, { 0: bytes })), 400, /TRB_ERR_BAD_REQUEST/, '__proto__ path')
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no pollution')
  await expectBad(await send(upload({ query: '{ __typename }', variables: {} }, { 0: ['query'] }, { 0: bytes })), 400, /must start with/, 'path outside variables')
  await expectBad(await send(upload({ query: '{ __typename }', variables: {} }, { 0: ['variables.nope'] }, { 0: bytes })), 400, /does not exist/, 'missing path')
  await expectBad(await send(upload([{ query: '{ __typename }' }], {}, {})), 400, /batched/, 'batch')
  const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [String(i), ['variables.f']]))
  await expectBad(await send(upload({ query: '{ __typename }', variables: { f: null } }, many, {})), 400, /at most 20 files/, 'too many files')
  await expectBad(await send(upload({ query: '{ __typename }', variables: { f: null } }, { 0: ['variables.f'] }, {})), 400, /file part .*0.* is missing/, 'missing file')
  await expectBad(await send(upload({ query: '{ __typename }', variables: { f: null } }, { 0: ['variables.f'] }, { 0: Buffer.alloc(100 * 1024) })), 413, /./, 'larger than bodyLimit')
  await expectBad(await send(valid(), { 'apollo-require-preflight': 'true' }, '/operations/Nope'), 415, /POST \/graphql only|TRB_ERR/, 'other routes')
  t.equal(got.length, before, 'no hostile request reached the upstream')

  const again = await send(valid())
  t.same(await again.json(), { data: { files_putBlob: true } }, 'a normal upload still works')
})
