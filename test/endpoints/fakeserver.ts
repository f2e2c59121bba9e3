/**
 * A minimal HTTP server for the endpoint tests: it serves discovery, OpenAPI and the reads of a few kinds
 * with the pure functions under test, so that real clients (the kubectl binaries next to `kubectl`) can be
 * pointed at it. Writes are answered by echoing the object back (enough for --dry-run=server). Every
 * request is recorded.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KindDecl, KObject } from '../../src/registry/kind.js';
import type { Definitions } from '../../src/registry/schema.js';
import { isDiscoveryPath, serveDiscovery } from '../../src/endpoints/discovery.js';
import { serveOpenAPI } from '../../src/endpoints/openapi.js';
import { negotiateOutput, transformObject } from '../../src/endpoints/table.js';
import { isStatusError } from '../../src/registry/errors.js';
import { versionInfo } from '../../src/util/version.js';
import { findBinary } from '../helpers/binaries.js';

export interface RecordedRequest {
  method: string;
  url: string;
  accept: string;
  contentType: string;
  status: number;
  responseContentType: string;
}

export interface FakeServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Objects by kind, for the reads: `store.get(kind)` = its objects. */
export type FakeStore = Map<KindDecl, KObject[]>;

function send(res: ServerResponse, status: number, body: string | Buffer, headers: Record<string, string> = {}): void {
  res.writeHead(status, headers);
  res.end(body);
}

function sendJSON(res: ServerResponse, status: number, obj: unknown): void {
  send(res, status, JSON.stringify(obj), { 'Content-Type': 'application/json' });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function handleResource(kinds: readonly KindDecl[], store: FakeStore, req: IncomingMessage, res: ServerResponse, path: string, body: string): boolean {
  for (const kind of kinds) {
    const prefix = kind.group ? `/apis/${kind.group}/${kind.version}` : `/api/${kind.version}`;
    const re = kind.namespaced
      ? new RegExp(`^${prefix}(?:/namespaces/([^/]+))?/${kind.resource}(?:/([^/]+))?(?:/(status|finalize))?$`)
      : new RegExp(`^${prefix}/()${kind.resource}(?:/([^/]+))?(?:/(status|finalize))?$`);
    const m = re.exec(path);
    if (!m) continue;
    const ns = m[1] || '';
    const name = m[2];
    const items = (store.get(kind) ?? []).filter((o) => !ns || o.metadata?.namespace === ns);
    if (req.method === 'GET') {
      const neg = negotiateOutput(req.headers.accept);
      let obj: KObject;
      if (name) {
        const found = items.find((o) => o.metadata?.name === name);
        if (!found) {
          sendJSON(res, 404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'NotFound', code: 404, message: `${kind.resource} "${name}" not found` });
          return true;
        }
        obj = found;
      } else {
        obj = { apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version, kind: kind.listKind, metadata: { resourceVersion: '42' }, items };
      }
      try {
        const url = new URL(req.url ?? '/', 'http://x');
        const out = transformObject(kind, obj, neg, { includeObject: url.searchParams.get('includeObject') ?? undefined });
        sendJSON(res, 200, out);
      } catch (e) {
        if (isStatusError(e)) sendJSON(res, e.code, e.status);
        else throw e;
      }
      return true;
    }
    // Writes: echo the object back (the tests use --dry-run=server).
    let obj: KObject;
    try {
      obj = JSON.parse(body || '{}') as KObject;
    } catch {
      obj = {};
    }
    if (req.method === 'PATCH' && name) {
      const found = items.find((o) => o.metadata?.name === name);
      obj = { ...(found ?? {}), ...obj };
    }
    sendJSON(res, req.method === 'POST' ? 201 : 200, obj);
    return true;
  }
  return false;
}

export interface FakeServerOptions {
  /** Serve /api and /apis in the legacy form whatever the client asks (as a server without aggregated discovery). */
  legacyDiscovery?: boolean;
}

/** Starts the server on 127.0.0.1 (a free port). */
export async function startFakeServer(
  kinds: readonly KindDecl[],
  definitions: Definitions,
  store: FakeStore = new Map(),
  opts: FakeServerOptions = {},
): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://x');
      const record: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        accept: req.headers.accept ?? '',
        contentType: req.headers['content-type'] ?? '',
        status: 0,
        responseContentType: '',
      };
      requests.push(record);
      const origWriteHead = res.writeHead.bind(res) as (...a: unknown[]) => ServerResponse;
      (res as unknown as { writeHead: (...a: unknown[]) => ServerResponse }).writeHead = (...a: unknown[]) => {
        record.status = a[0] as number;
        const h = a.find((x, i) => i > 0 && x && typeof x === 'object') as Record<string, string> | undefined;
        record.responseContentType = h?.['Content-Type'] ?? '';
        return origWriteHead(...a);
      };
      const path = url.pathname;
      if (path === '/version') return sendJSON(res, 200, versionInfo());
      const oa = serveOpenAPI(kinds, definitions, {
        path,
        query: url.searchParams,
        accept: req.headers.accept,
        ifNoneMatch: req.headers['if-none-match'],
      });
      if (oa) return send(res, oa.status, oa.body, oa.headers);
      if (req.method === 'GET' && isDiscoveryPath(path)) {
        const addr = server.address() as AddressInfo;
        const d = serveDiscovery(kinds, {
          path,
          accept: opts.legacyDiscovery ? 'application/json' : req.headers.accept,
          ifNoneMatch: req.headers['if-none-match'],
          serverAddress: `127.0.0.1:${addr.port}`,
        });
        return send(res, d.status, d.body, d.headers);
      }
      if (handleResource(kinds, store, req, res, path, body)) return;
      send(res, 404, '404 page not found\n', { 'Content-Type': 'text/plain; charset=utf-8' });
    })().catch((e: unknown) => {
      send(res, 500, String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The versioned kubectl binaries installed next to `kubectl` (kubectl.1.27 ... kubectl.1.33), oldest first.
 * None found: locally the kubectl tests skip; under CI=true this throws (as test/helpers/binaries.ts does for
 * every program tests need), so that a machine without them cannot pass by skipping.
 */
export function kubectlBinaries(): { version: string; path: string }[] {
  const out: { version: string; path: string }[] = [];
  const kubectl = findBinary('kubectl');
  if (kubectl !== null) {
    let real = kubectl;
    try {
      real = realpathSync(kubectl);
    } catch {
      // a dangling link: look next to it
    }
    for (let minor = 20; minor <= 40; minor++) {
      const p = join(dirname(real), `kubectl.1.${minor}`);
      if (existsSync(p)) out.push({ version: `1.${minor}`, path: p });
    }
  }
  if (out.length === 0 && process.env.CI === 'true') {
    throw new Error('no kubectl.1.xx binaries next to kubectl on PATH (CI=true: not skipping the kubectl tests)');
  }
  return out;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A HOME for kubectl runs that share a cache directory; remove it with `rmSync(home, {recursive: true})`. */
export function kubectlHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'orch-kubectl-'));
  writeFileSync(join(home, 'config'), '');
  return home;
}

/**
 * Runs kubectl against a server with no kubeconfig; with a fresh HOME and cache directory (no cached
 * discovery) unless `home` (from kubectlHome) is given.
 */
export async function runKubectl(
  binary: string,
  server: string,
  args: string[],
  opts: { stdin?: string; home?: string; timeoutMs?: number } = {},
): Promise<KubectlResult> {
  const home = opts.home ?? kubectlHome();
  const kubeconfig = join(home, 'config');
  const { stdin, timeoutMs = 60_000 } = opts;
  try {
    return await new Promise<KubectlResult>((resolve, reject) => {
      const child = spawn(binary, [`--server=${server}`, `--cache-dir=${join(home, 'cache')}`, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: home, KUBECONFIG: kubeconfig },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? -1, stdout, stderr });
      });
      child.stdin.end(stdin ?? '');
    });
  } finally {
    if (!opts.home) rmSync(home, { recursive: true, force: true });
  }
}
