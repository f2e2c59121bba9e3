/**
 * The request side of server-side apply and field tracking, through raw HTTPS as any client sends it, with
 * Kubernetes' answers: fieldManager required for apply (422) and force refused on other patches (422); YAML
 * or JSON bodies; dryRun; managedFields in a request body (must be absent from an apply; on updates an empty
 * list resets them, invalid ones are ignored); the manager taken from the user agent; Update entries capped at
 * ten with the oldest merged into "ancient-changes"; type errors (422) and objects of another kind (400).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';
const BASE = '/api/v1/namespaces/default/configmaps';

const cm = (name: string, data: Record<string, unknown>, metadata: Record<string, unknown> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...metadata }, data });

interface Entry {
  manager: string;
  operation: string;
  fieldsV1: Record<string, unknown>;
}

describe('apply and managedFields requests', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const apply = (name: string, query: string, body: string) => c.request('PATCH', `${BASE}/${name}?${query}`, { body, contentType: APPLY });
  const managers = (obj: { metadata: { managedFields?: Entry[] } }) => (obj.metadata.managedFields ?? []).map((e) => `${e.manager}/${e.operation}`);

  it('requires fieldManager for apply, and refuses force on other patches', async () => {
    const r = await apply('req', '', cm('req', { a: '1' }));
    assert.equal(r.status, 422);
    assert.equal(r.json.message, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    const f = await c.request('PATCH', `${BASE}/req?force=true`, { body: '{}', contentType: MERGE });
    assert.equal(f.status, 422);
    assert.equal(f.json.message, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch');
  });

  it('applies with dryRun without storing anything, then for real (201 on create, 200 after)', async () => {
    const dry = await apply('req', 'fieldManager=m&dryRun=All', cm('req', { a: '1' }));
    assert.equal(dry.status, 201, dry.text);
    assert.deepEqual(dry.json.data, { a: '1' });
    assert.equal((await c.request('GET', `${BASE}/req`)).status, 404);
    const created = await apply('req', 'fieldManager=m', cm('req', { a: '1' }));
    assert.equal(created.status, 201, created.text);
    const dryUpdate = await apply('req', 'fieldManager=m&dryRun=All', cm('req', { a: '2' }));
    assert.equal(dryUpdate.status, 200);
    assert.equal(dryUpdate.json.data.a, '2');
    assert.equal((await c.request('GET', `${BASE}/req`)).json.data.a, '1');
  });

  it('takes YAML as well as JSON', async () => {
    const r = await apply('req', 'fieldManager=yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: req\ndata:\n  fromYaml: "yes"\n');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.fromYaml, 'yes');
    const entry = (r.json.metadata.managedFields as Entry[]).find((e) => e.manager === 'yaml');
    assert.deepEqual(entry?.fieldsV1, { 'f:data': { 'f:fromYaml': {} } });
  });

  it('refuses managedFields, another kind or version, and values of the wrong type in an applied object', async () => {
    const mf = await apply('req', 'fieldManager=m', cm('req', { a: '1' }, { managedFields: [] }));
    assert.equal(mf.status, 400);
    assert.equal(mf.json.message, 'metadata.managedFields must be nil');
    const kind = await apply('req', 'fieldManager=m', '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"req"}}');
    assert.equal(kind.status, 400);
    assert.equal(kind.json.message, 'invalid object type: /v1, Kind=Secret');
    const type = await apply('req', 'fieldManager=m', cm('req', { a: 1 }));
    assert.equal(type.status, 422);
    assert.equal(type.json.reason, 'Invalid');
    assert.equal(
      type.json.message,
      'failed to create typed patch object (/req; /v1, Kind=ConfigMap): .data.a: expected string, got &value.valueUnstructured{Value:1}',
    );
    assert.deepEqual(type.json.details.causes, [{ reason: 'FieldValueInvalid', message: 'expected string, got &value.valueUnstructured{Value:1}', field: '.data.a' }]);
  });

  it('names the manager of a write without fieldManager after the user agent, up to its first "/"', async () => {
    const r = await c.request('POST', BASE, { body: cm('ua', { a: '1' }), headers: { 'user-agent': 'my-controller/v1.2.3 (linux/amd64) build/abc' } });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(managers(r.json), ['my-controller/Update']);
    // Non-printable characters are dropped, and the name stops before 128 bytes of UTF-8 would be passed.
    const tab = await c.request('POST', BASE, { body: cm('ua-tab', { a: '1' }), headers: { 'user-agent': 'my\tagent/1.0' } });
    assert.deepEqual(managers(tab.json), ['myagent/Update']);
    const long = await c.request('POST', BASE, { body: cm('ua-long', { a: '1' }), headers: { 'user-agent': `${'x'.repeat(127)}\u00e9/1.0` } });
    assert.deepEqual(managers(long.json), [`${'x'.repeat(127)}/Update`]);
  });

  it('ignores invalid managedFields in an update, resets them on an empty list, and takes valid ones as sent', async () => {
    const put = async (manager: string, managedFields: unknown, data: Record<string, string>) => {
      const live = (await c.request('GET', `${BASE}/ua`)).json;
      return c.request('PUT', `${BASE}/ua?fieldManager=${manager}`, { body: { ...live, data, metadata: { ...live.metadata, managedFields } } });
    };

    const invalid = await put('put-1', [{ manager: 'x', operation: 'Bogus' }], { a: '1', b: '2' });
    assert.equal(invalid.status, 200, invalid.text.slice(0, 600));
    assert.deepEqual(managers(invalid.json), ['my-controller/Update', 'put-1/Update'], 'the live entries were kept');

    const sent = [{ manager: 'imported', operation: 'Update', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } }];
    const valid = await put('put-2', sent, { a: '1', b: '3' });
    assert.equal(valid.status, 200, valid.text);
    assert.deepEqual(managers(valid.json), ['imported/Update', 'put-2/Update'], 'the sent entries replaced the live ones');

    const reset = await put('put-3', [], { a: '1', b: '4' });
    assert.equal(reset.status, 200, reset.text);
    assert.equal(reset.json.metadata.managedFields, undefined, 'an empty list resets them, and an update of an object nobody manages records nothing');
  });

  it('strips managedFields with the JSON patch Kubernetes documents ([{}])', async () => {
    const r = await c.request('PATCH', `${BASE}/req`, {
      body: JSON.stringify([{ op: 'replace', path: '/metadata/managedFields', value: [{}] }]),
      contentType: 'application/json-patch+json',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.metadata.managedFields, undefined);
  });

  it('keeps at most ten Update entries, merging the oldest into "ancient-changes"', async () => {
    const created = await c.request('POST', `${BASE}?fieldManager=creator`, { body: cm('many', { base: '1' }) });
    assert.equal(created.status, 201, created.text);
    for (let i = 0; i < 11; i++) {
      const r = await c.request('PATCH', `${BASE}/many?fieldManager=m${String(i).padStart(2, '0')}`, { body: JSON.stringify({ data: { [`k${i}`]: 'v' } }), contentType: MERGE });
      assert.equal(r.status, 200, r.text);
    }
    const entries = (await c.request('GET', `${BASE}/many`)).json.metadata.managedFields as Entry[];
    assert.equal(entries.length, 10);
    const ancient = entries.find((e) => e.manager === 'ancient-changes');
    assert.equal(ancient?.operation, 'Update');
    // Every field is still owned by someone: the merged entries' fields went to ancient-changes.
    const owned = new Set(entries.flatMap((e) => Object.keys((e.fieldsV1['f:data'] ?? {}))).filter((f) => f !== '.'));
    assert.deepEqual([...owned].sort(), ['f:base', ...Array.from({ length: 11 }, (_, i) => `f:k${i}`)].sort());
  });
});
