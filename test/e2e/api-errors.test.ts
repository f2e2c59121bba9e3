/**
 * API errors over raw HTTP: every error is a Kubernetes Status with the code, reason, message and details
 * kube-apiserver 1.23 sends (spec document 1's delete answers win where it prescribes them). The server runs
 * in-process; requests go over node:https with the cluster's CA and a bearer token, and one over node:http2.
 *
 * Where orch answers differently today, the test keeps Kubernetes' answer and is marked
 * `{ todo: 'server differs: ...' }`, so the suite stays green and the difference stays visible.
 *
 * Where the Kubernetes answers come from:
 *   - apimachinery pkg/api/errors/errors.go: NewNotFound, NewAlreadyExists, NewConflict, NewInvalid,
 *     NewUnauthorized, NewRequestEntityTooLargeError, NewResourceExpired, NewGenericServerResponse (the
 *     "the server could not find the requested resource" family, details {})
 *   - apimachinery pkg/apis/meta/v1/types.go: StatusDetails.group is omitempty (no "group": "" in JSON)
 *   - apiserver pkg/server/handler.go serviceErrorHandler + go-restful's router (RouterJSR311.detectRoute):
 *     unknown routes 404, wrong methods 405, an Accept no route produces 406 "406: Not Acceptable", a PATCH
 *     body type no route consumes 415 "415: Unsupported Media Type"
 *   - apiserver pkg/endpoints/handlers/{create,update,patch,rest}.go: transformDecodeError, checkName,
 *     limitedReadBody, ValidatePatchOptions; handlers/negotiation/errors.go: NotAcceptable/UnsupportedMediaType
 *   - apiserver pkg/storage/etcd3/store.go handleCompactedErrorForPaging (410 with a fresh continue token)
 *   - apimachinery pkg/runtime/serializer/json/json.go: pretty output is MarshalIndent, without a final newline
 *   - Go net/http NotFound for paths no handler owns (plain text until kubernetes/kubernetes#138219, 2026)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { connect as http2Connect } from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  text: string;
}

interface SendOptions {
  body?: string | Buffer | object;
  contentType?: string;
  accept?: string;
  /** The bearer token; null sends no Authorization header. Defaults to the cluster's admin token. */
  token?: string | null;
}

interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
}

/** A failure Status as kube-apiserver writes it: metadata {}, and details only when the error has them. */
function failure(code: number, reason: string, message: string, details?: StatusDetails): Record<string, unknown> {
  const status: Record<string, unknown> = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason };
  if (details !== undefined) status.details = details;
  status.code = code;
  return status;
}

const NOT_FOUND_PATH = failure(404, 'NotFound', 'the server could not find the requested resource', {});
const METHOD_NOT_ALLOWED = failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});

/** The reply is a JSON Status equal to `expected`, with the HTTP status code it names. */
function expectStatus(reply: Reply, expected: Record<string, unknown>): void {
  assert.match(String(reply.headers['content-type']), /^application\/json/, reply.text);
  assert.deepEqual(JSON.parse(reply.text), expected);
  assert.equal(reply.status, expected.code, reply.text);
}

const NS = 'errors-e2e';
const pvc = (name: string, spec: object = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } }) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec,
});
const namespace = (name: string, extra: object = {}) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...extra } });

describe('API errors as Kubernetes Status objects', () => {
  let c: TestCluster;

  function send(method: string, path: string, opts: SendOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = {};
    const token = opts.token === undefined ? c.token : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (opts.accept !== undefined) headers.accept = opts.accept;
    let body: Buffer | undefined;
    if (opts.body !== undefined) {
      body = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = String(body.length);
    }
    return new Promise((resolve, reject) => {
      const req = httpsRequest(c.url + path, { method, headers, ca: c.cp.server.caCert, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, text: raw.toString('utf8') });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  async function create(path: string, obj: object): Promise<any> {
    const r = await send('POST', path, { body: obj });
    assert.equal(r.status, 201, r.text);
    return JSON.parse(r.text);
  }

  before(async () => {
    c = await startCluster();
    await create('/api/v1/namespaces', namespace(NS));
    await create(`/api/v1/namespaces/${NS}/persistentvolumeclaims`, pvc('data'));
  });
  after(async () => c?.stop());

  describe('401 Unauthorized', () => {
    it('answers a request without credentials', async () => {
      expectStatus(await send('GET', '/api/v1/namespaces', { token: null }), failure(401, 'Unauthorized', 'Unauthorized'));
    });

    it('answers a request with an unknown bearer token', async () => {
      expectStatus(await send('GET', '/api/v1/namespaces', { token: 'no-such-token' }), failure(401, 'Unauthorized', 'Unauthorized'));
    });
  });

  describe('404 NotFound', () => {
    it('names an unknown namespace', async () => {
      expectStatus(
        await send('GET', '/api/v1/namespaces/no-such-ns'),
        failure(404, 'NotFound', 'namespaces "no-such-ns" not found', { name: 'no-such-ns', kind: 'namespaces' }),
      );
    });

    it('names an unknown claim', async () => {
      expectStatus(
        await send('GET', `/api/v1/namespaces/${NS}/persistentvolumeclaims/no-such-claim`),
        failure(404, 'NotFound', 'persistentvolumeclaims "no-such-claim" not found', { name: 'no-such-claim', kind: 'persistentvolumeclaims' }),
      );
    });

    it('answers an unknown resource of a served group version', async () => {
      expectStatus(await send('GET', '/api/v1/widgets'), NOT_FOUND_PATH);
      expectStatus(await send('GET', `/api/v1/namespaces/${NS}/widgets`), NOT_FOUND_PATH);
    });

    it('answers an unknown subresource', async () => {
      expectStatus(await send('GET', `/api/v1/namespaces/${NS}/persistentvolumeclaims/data/bogus`), NOT_FOUND_PATH);
    });

    it(
      'answers a path no handler owns in plain text',
      async () => {
        const r = await send('GET', '/no/such/path');
        assert.equal(r.status, 404);
        assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(r.text, '404 page not found\n');
      },
    );
  });

  describe('405 MethodNotAllowed', () => {
    it(
      'refuses POST to a named object',
      async () => {
        expectStatus(await send('POST', `/api/v1/namespaces/${NS}`, { body: namespace(NS) }), METHOD_NOT_ALLOWED);
      },
    );

    it(
      'refuses deletecollection on namespaces',
      async () => {
        expectStatus(await send('DELETE', '/api/v1/namespaces'), METHOD_NOT_ALLOWED);
      },
    );
  });

  describe('406 NotAcceptable', () => {
    it('answers an Accept no route produces', async () => {
      expectStatus(await send('GET', '/api/v1/namespaces/default', { accept: 'text/html' }), failure(406, 'NotAcceptable', '406: Not Acceptable', {}));
    });

    it('answers a conversion the endpoint cannot make', async () => {
      expectStatus(
        await send('GET', '/api/v1/namespaces/default', { accept: 'application/json;as=Table;g=meta.k8s.io;v=v9' }),
        failure(406, 'NotAcceptable', 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf'),
      );
    });

    // Kubernetes serves built-in kinds in protobuf, so a protobuf-only Accept is no error there; orch does not
    // encode protobuf answers yet and answers 406.
    it('serves a protobuf-only Accept', async () => {
      const r = await send('GET', '/api/v1/namespaces/default', { accept: 'application/vnd.kubernetes.protobuf' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['content-type'], 'application/vnd.kubernetes.protobuf');
      assert.deepEqual([...r.raw.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    });
  });

  describe('409 AlreadyExists and Conflict', () => {
    it('refuses a namespace that exists', async () => {
      expectStatus(
        await send('POST', '/api/v1/namespaces', { body: namespace(NS) }),
        failure(409, 'AlreadyExists', `namespaces "${NS}" already exists`, { name: NS, kind: 'namespaces' }),
      );
    });

    it('refuses a PUT with a stale resourceVersion', async () => {
      const created = await create('/api/v1/namespaces', namespace('stale-rv'));
      const stale = created.metadata.resourceVersion as string;
      const relabeled = await send('PUT', '/api/v1/namespaces/stale-rv', { body: namespace('stale-rv', { labels: { a: 'b' }, resourceVersion: stale }) });
      assert.equal(relabeled.status, 200, relabeled.text);
      expectStatus(
        await send('PUT', '/api/v1/namespaces/stale-rv', { body: namespace('stale-rv', { labels: { a: 'c' }, resourceVersion: stale }) }),
        failure(
          409,
          'Conflict',
          'Operation cannot be fulfilled on namespaces "stale-rv": the object has been modified; please apply your changes to the latest version and try again',
          { name: 'stale-rv', kind: 'namespaces' },
        ),
      );
    });
  });

  describe('410 Expired', () => {
    it('refuses a continue token whose revision was compacted, and hands out one that continues', async () => {
      const first = await send('GET', '/api/v1/namespaces?limit=1');
      assert.equal(first.status, 200, first.text);
      const token = JSON.parse(first.text).metadata.continue as string;
      assert.ok(token, 'the first page has a continue token');
      await create('/api/v1/namespaces', namespace('zz-after-first-page'));
      const kv = c.cp.storage.kvFor('', 'namespaces');
      await kv.compact(await kv.currentRevision());

      const r = await send('GET', `/api/v1/namespaces?limit=1&continue=${encodeURIComponent(token)}`);
      const body = JSON.parse(r.text);
      assert.equal(r.status, 410, r.text);
      assert.equal(typeof body.metadata.continue, 'string');
      assert.deepEqual(Object.keys(body.metadata), ['continue']);
      assert.deepEqual(
        { ...body, metadata: {} },
        failure(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
        ),
      );

      const rest = await send('GET', `/api/v1/namespaces?continue=${encodeURIComponent(body.metadata.continue)}`);
      assert.equal(rest.status, 200, rest.text);
      const names = (JSON.parse(rest.text).items as { metadata: { name: string } }[]).map((i) => i.metadata.name);
      assert.ok(names.includes('zz-after-first-page'), names.join(','));
      assert.ok(!names.includes('default'), 'the remainder starts after the first page');
    });
  });

  describe('413 RequestEntityTooLarge', () => {
    it('refuses a body over 3 MiB', async () => {
      const body = Buffer.alloc(3 * 1024 * 1024 + 1, 0x20);
      expectStatus(await send('POST', '/api/v1/namespaces', { body }), failure(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728'));
    });
  });

  describe('415 UnsupportedMediaType', () => {
    it('refuses an object body in text/plain', async () => {
      expectStatus(
        await send('POST', '/api/v1/namespaces', { body: JSON.stringify(namespace('plain')), contentType: 'text/plain' }),
        failure(
          415,
          'UnsupportedMediaType',
          'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf',
        ),
      );
    });

    it('refuses a PATCH in text/plain', async () => {
      expectStatus(
        await send('PATCH', `/api/v1/namespaces/${NS}`, { body: '{"metadata":{"labels":{"a":"b"}}}', contentType: 'text/plain' }),
        failure(415, 'UnsupportedMediaType', '415: Unsupported Media Type', {}),
      );
    });

    // Server-side apply is GA in 1.22: an apply patch is no 415 there. Without fieldManager it is a 422 on
    // PatchOptions (ValidatePatchOptions), the answer KUBERNETES-FACTS records.
    it('takes an apply patch (application/apply-patch+yaml): 422 without fieldManager', async () => {
      expectStatus(
        await send('PATCH', `/api/v1/namespaces/${NS}`, { body: 'metadata:\n  labels: {a: b}\n', contentType: 'application/apply-patch+yaml' }),
        failure(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
          group: 'meta.k8s.io',
          kind: 'PatchOptions',
          causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
        }),
      );
    });
  });

  describe('422 Invalid', () => {
    it('lists one cause per field of an invalid claim', async () => {
      const r = await send('POST', `/api/v1/namespaces/${NS}/persistentvolumeclaims`, {
        body: pvc('bad', { accessModes: ['ReadWriteSometimes'], volumeMode: 'Block2' }),
      });
      const accessModes = 'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"';
      const volumeMode = 'Unsupported value: "Block2": supported values: "Block", "Filesystem"';
      expectStatus(
        r,
        failure(
          422,
          'Invalid',
          `PersistentVolumeClaim "bad" is invalid: [spec.accessModes: ${accessModes}, spec.resources[storage]: Required value, spec.volumeMode: ${volumeMode}]`,
          {
            name: 'bad',
            kind: 'PersistentVolumeClaim',
            causes: [
              { reason: 'FieldValueNotSupported', message: accessModes, field: 'spec.accessModes' },
              { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.resources[storage]' },
              { reason: 'FieldValueNotSupported', message: volumeMode, field: 'spec.volumeMode' },
            ],
          },
        ),
      );
    });
  });

  describe('400 BadRequest', () => {
    it('fieldValidation: Strict lists duplicate and unknown fields in document order, Warn sends Warning headers, Ignore neither', async () => {
      const body = '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fv","name":"fv","bogus":1},"spec":{"extra":true}}';
      expectStatus(
        await send('POST', '/api/v1/namespaces?fieldValidation=Strict', { body }),
        failure(
          400,
          'BadRequest',
          'Namespace in version "v1" cannot be handled as a Namespace: strict decoding error: duplicate field "metadata.name", unknown field "metadata.bogus", unknown field "spec.extra"',
        ),
      );
      const warned = await send('POST', '/api/v1/namespaces?fieldValidation=Warn&dryRun=All', { body });
      assert.equal(warned.status, 201, warned.text);
      assert.deepEqual(warned.headers['warning'], '299 - "duplicate field \\"metadata.name\\"", 299 - "unknown field \\"metadata.bogus\\"", 299 - "unknown field \\"spec.extra\\""');
      assert.equal(JSON.parse(warned.text).metadata.bogus, undefined);
      const ignored = await send('POST', '/api/v1/namespaces?fieldValidation=Ignore&dryRun=All', { body });
      assert.equal(ignored.status, 201);
      assert.equal(ignored.headers['warning'], undefined);
      expectStatus(
        await send('POST', '/api/v1/namespaces?fieldValidation=Loose', { body }),
        failure(422, 'Invalid', 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"', {
          group: 'meta.k8s.io',
          kind: 'CreateOptions',
          causes: [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"', field: 'fieldValidation' }],
        }),
      );
    });

    it('refuses a malformed JSON body', async () => {
      expectStatus(
        await send('POST', '/api/v1/namespaces', { body: '{not json}' }),
        failure(
          400,
          'BadRequest',
          "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json})",
        ),
      );
    });

    it('refuses an apiVersion the group does not serve', async () => {
      expectStatus(
        await send('POST', '/api/v1/namespaces', { body: { apiVersion: 'v2', kind: 'Namespace', metadata: { name: 'v2-ns' } } }),
        failure(
          400,
          'BadRequest',
          'Namespace in version "v2" cannot be handled as a Namespace: no kind "Namespace" is registered for version "v2" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"',
        ),
      );
    });

    it('refuses a body of another kind', async () => {
      expectStatus(
        await send('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pod-ns' } } }),
        failure(400, 'BadRequest', 'Pod in version "v1" cannot be handled as a Namespace: converting (v1.Pod) to (core.Namespace): unknown conversion'),
      );
    });

    it('refuses a namespace in the body other than the path\'s', async () => {
      const body = { ...pvc('elsewhere'), metadata: { name: 'elsewhere', namespace: 'default' } };
      expectStatus(
        await send('POST', `/api/v1/namespaces/${NS}/persistentvolumeclaims`, { body }),
        failure(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request'),
      );
    });

    it('refuses a PUT whose body names another object', async () => {
      expectStatus(
        await send('PUT', `/api/v1/namespaces/${NS}`, { body: namespace('someone-else') }),
        failure(400, 'BadRequest', `the name of the object (someone-else) does not match the name on the URL (${NS})`),
      );
    });

    it('refuses a malformed labelSelector', async () => {
      expectStatus(
        await send('GET', `/api/v1/namespaces?labelSelector=${encodeURIComponent('tier in web')}`),
        failure(400, 'BadRequest', "unable to parse requirement: found 'web' expected: '('"),
      );
    });

    it('refuses a field selector on a field the kind does not index', async () => {
      expectStatus(await send('GET', '/api/v1/namespaces?fieldSelector=spec.foo%3Dbar'), failure(400, 'BadRequest', 'field label not supported: spec.foo'));
    });

    it('refuses a limit that is not an integer', async () => {
      expectStatus(await send('GET', '/api/v1/namespaces?limit=abc'), failure(400, 'BadRequest', 'strconv.ParseInt: parsing "abc": invalid syntax'));
    });
  });

  describe('dryRun and pretty', () => {
    it('dryRun=All answers 201 with the would-be object and stores nothing', async () => {
      const r = await send('POST', '/api/v1/namespaces?dryRun=All', { body: namespace('dry-run') });
      assert.equal(r.status, 201, r.text);
      const obj = JSON.parse(r.text);
      assert.equal(obj.kind, 'Namespace');
      assert.equal(obj.metadata.name, 'dry-run');
      assert.match(obj.metadata.uid, /^[0-9a-f-]{36}$/);
      assert.equal(obj.metadata.resourceVersion, undefined);
      assert.equal(obj.status.phase, 'Active');
      assert.equal((await send('GET', '/api/v1/namespaces/dry-run')).status, 404);
    });

    it('pretty=true indents objects and Status answers with two spaces', async () => {
      const obj = await send('GET', '/api/v1/namespaces/default?pretty=true');
      assert.equal(obj.status, 200);
      assert.equal(obj.text.trimEnd(), JSON.stringify(JSON.parse(obj.text), null, 2));
      const err = await send('GET', '/api/v1/namespaces?limit=abc&pretty=true');
      assert.equal(err.status, 400);
      assert.equal(err.text.trimEnd(), JSON.stringify(JSON.parse(err.text), null, 2));
    });

    it('pretty=true indents the Status of an unknown resource too', async () => {
      const err = await send('GET', '/api/v1/widgets?pretty=true');
      assert.equal(err.status, 404);
      assert.deepEqual(JSON.parse(err.text), NOT_FOUND_PATH);
      assert.equal(err.text.trimEnd(), JSON.stringify(JSON.parse(err.text), null, 2));
    });

    it('pretty=true output has no final newline (json.MarshalIndent)', async () => {
      const r = await send('GET', '/api/v1/namespaces/default?pretty=true');
      assert.ok(!r.text.endsWith('\n'));
    });
  });

  describe('delete answers (spec document 1)', () => {
    it('Namespace DELETE answers a Status naming the namespace and its uid', async () => {
      const ns = await create('/api/v1/namespaces', namespace('doomed'));
      const r = await send('DELETE', '/api/v1/namespaces/doomed');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(JSON.parse(r.text), {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name: 'doomed', kind: 'namespaces', uid: ns.metadata.uid },
      });
    });

    it('PersistentVolumeClaim DELETE answers the claim', async () => {
      const claim = await create(`/api/v1/namespaces/${NS}/persistentvolumeclaims`, pvc('gone'));
      const r = await send('DELETE', `/api/v1/namespaces/${NS}/persistentvolumeclaims/gone`);
      assert.equal(r.status, 200, r.text);
      const body = JSON.parse(r.text);
      assert.equal(body.kind, 'PersistentVolumeClaim');
      assert.equal(body.apiVersion, 'v1');
      assert.equal(body.metadata.name, 'gone');
      assert.equal(body.metadata.uid, claim.metadata.uid);
    });

    it('PersistentVolumeClaim delete-collection answers a Status', async () => {
      await create('/api/v1/namespaces', namespace('sweep'));
      await create('/api/v1/namespaces/sweep/persistentvolumeclaims', pvc('one'));
      await create('/api/v1/namespaces/sweep/persistentvolumeclaims', pvc('two'));
      const r = await send('DELETE', '/api/v1/namespaces/sweep/persistentvolumeclaims');
      assert.equal(r.status, 200, r.text);
      const body = JSON.parse(r.text);
      assert.equal(body.kind, 'Status');
      assert.equal(body.apiVersion, 'v1');
      assert.equal(body.status, 'Success');
      assert.deepEqual(body.metadata, {});
    });
  });

  describe('HTTP/2', () => {
    it('answers errors as a Status over h2 too', async () => {
      const session = http2Connect(c.url, { ca: c.cp.server.caCert });
      try {
        const reply = await new Promise<Reply>((resolve, reject) => {
          const stream = session.request({ ':method': 'GET', ':path': `/api/v1/namespaces/${NS}/widgets`, authorization: `Bearer ${c.token}` });
          const chunks: Buffer[] = [];
          let headers: IncomingHttpHeaders = {};
          stream.on('response', (h) => (headers = h as IncomingHttpHeaders));
          stream.on('data', (d: Buffer) => chunks.push(d));
          stream.on('end', () => {
            const raw = Buffer.concat(chunks);
            resolve({ status: Number(headers[':status']), headers, raw, text: raw.toString('utf8') });
          });
          stream.on('error', reject);
          stream.end();
        });
        assert.equal(session.alpnProtocol, 'h2');
        expectStatus(reply, NOT_FOUND_PATH);
      } finally {
        session.close();
      }
    });
  });
});
