/**
 * A minimal image registry on 127.0.0.1 for tests (the OCI distribution API's pull side, plain HTTP):
 * it serves the images of an OCI image layout (containerd.ts buildImageLayout) under any repository
 * name, a tag naming the manifest whose org.opencontainers.image.ref.name is that tag.
 *
 *   GET /v2/                                   200 (the API version check)
 *   GET|HEAD /v2/<name>/manifests/<tag|digest>  the manifest, with Docker-Content-Digest
 *   GET|HEAD /v2/<name>/blobs/<digest>          a blob
 *
 * With `basicAuth`, every request needs that user and password (401 with a Basic challenge otherwise).
 * Each request is recorded with the user it authenticated as ('' for none).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface TestRegistry {
  /** 127.0.0.1:<port> */
  host: string;
  requests: { method: string; path: string; user: string; status: number }[];
  stop(): Promise<void>;
}

interface IndexEntry {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export async function startRegistry(layout: string, o: { basicAuth?: { username: string; password: string } } = {}): Promise<TestRegistry> {
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: IndexEntry[] };
  const requests: TestRegistry['requests'] = [];
  const send = (req: IncomingMessage, res: ServerResponse, status: number, body: Buffer | string, headers: Record<string, string | number> = {}): void => {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    res.writeHead(status, { 'Docker-Distribution-API-Version': 'registry/2.0', 'Content-Length': data.length, ...headers });
    res.end(req.method === 'HEAD' ? undefined : data);
  };
  const error = (code: string, message: string) => JSON.stringify({ errors: [{ code, message }] });
  const blob = async (digest: string): Promise<Buffer | undefined> => {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return undefined;
    return readFile(join(layout, 'blobs/sha256', digest.slice('sha256:'.length))).catch(() => undefined);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<number> => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/v2/' || path === '/v2') {
      send(req, res, 200, '{}', { 'Content-Type': 'application/json' });
      return 200;
    }
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(path);
    if (!m || (req.method !== 'GET' && req.method !== 'HEAD')) {
      send(req, res, 404, error('NAME_UNKNOWN', 'not found'), { 'Content-Type': 'application/json' });
      return 404;
    }
    const [, , kind, ref] = m as unknown as [string, string, string, string];
    let entry: IndexEntry | undefined;
    if (kind === 'manifests') {
      entry = ref.startsWith('sha256:') ? index.manifests.find((e) => e.digest === ref) : index.manifests.find((e) => e.annotations?.['org.opencontainers.image.ref.name'] === ref);
    }
    const digest = kind === 'manifests' ? entry?.digest : ref;
    const data = digest !== undefined ? await blob(digest) : undefined;
    if (!data || digest === undefined) {
      const code = kind === 'manifests' ? 'MANIFEST_UNKNOWN' : 'BLOB_UNKNOWN';
      send(req, res, 404, error(code, `${ref} unknown`), { 'Content-Type': 'application/json' });
      return 404;
    }
    const type = kind === 'manifests' ? (entry?.mediaType ?? 'application/vnd.oci.image.manifest.v1+json') : 'application/octet-stream';
    send(req, res, 200, data, { 'Content-Type': type, 'Docker-Content-Digest': digest });
    return 200;
  };
  const server = createServer((req, res) => {
    let user = '';
    const header = req.headers.authorization ?? '';
    if (header.startsWith('Basic ')) {
      const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const [u, p] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
      if (o.basicAuth && u === o.basicAuth.username && p === o.basicAuth.password) user = u;
    }
    const record = (status: number) => requests.push({ method: req.method ?? '', path: req.url ?? '', user, status });
    if (o.basicAuth && user === '') {
      send(req, res, 401, error('UNAUTHORIZED', 'authentication required'), { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Basic realm="orch-test"' });
      record(401);
      return;
    }
    handle(req, res).then(record, () => {
      if (!res.headersSent) send(req, res, 500, 'error');
      record(500);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
