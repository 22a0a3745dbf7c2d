/**
 * A TypeScript operation (README "TypeScript operations"): calls the stored queries Album (the
 * SQLite source) and AlbumStats (the charts REST API) through the in-process `operations` client, in
 * parallel and with no HTTP, and answers one object. `GET /operations/AlbumCard?albumId=1`.
 */
import { z } from 'zod'
// In this repository the example imports the gateway's sources, as its config.ts does; a project of one's own
// writes `from 'tributary-gateway'` (README "TypeScript operations").
import { createOperation, OperationError } from '../../../gateway/operations/define.js'

interface Album {
  chinook_findUniqueAlbum: { albumId: number; title: string; artist: { name: string } } | null
}
interface AlbumStats {
  charts_getAlbumStats: { plays: number; via: string | null } | null
}

export default createOperation.query({
  input: z.object({ albumId: z.number().int().positive() }),
  response: z.object({ albumId: z.number(), title: z.string(), artist: z.string(), plays: z.number().nullable(), via: z.string().nullable() }),
  handler: async ({ input, operations }) => {
    const [album, stats] = await Promise.all([
      operations.query<Album>({ operationName: 'Album', input: { albumId: input.albumId } }),
      operations.query<AlbumStats>({ operationName: 'AlbumStats', input: { albumId: input.albumId } }),
    ])
    const a = album.data?.chinook_findUniqueAlbum
    if (!a) throw new OperationError({ code: 'NotFound', statusCode: 404, message: `No album ${input.albumId}` })
    const s = stats.data?.charts_getAlbumStats
    return { albumId: a.albumId, title: a.title, artist: a.artist.name, plays: s?.plays ?? null, via: s?.via ?? null }
  },
})
