import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  compareKubeAwareVersions,
  negotiateDiscovery,
  parseAccept,
  serveDiscovery,
  storageVersionHash,
} from '../../src/endpoints/discovery.js';
import { ALL_DEFINITIONS, BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import { TEST_DEFINITIONS, TEST_KINDS } from './testkinds.js';
import { kubectlBinaries, runKubectl, startFakeServer, type FakeServer } from './fakeserver.js';

/** What kubectl 1.27-1.29 (client-go) send to /api and /apis. */
const ACCEPT_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
/** What kubectl 1.30-1.33 send. */
const ACCEPT_V2 =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

describe('storageVersionHash', () => {
  it('is base64 of the first 8 bytes of sha256(group/version/Kind), as Kubernetes publishes it', () => {
    // Values served by real clusters.
    assert.equal(storageVersionHash('', 'v1', 'Pod'), 'xPOwRZ+Yhw8=');
    assert.equal(storageVersionHash('', 'v1', 'Namespace'), 'Q3oi5N2YM8M=');
    assert.equal(storageVersionHash('', 'v1', 'PersistentVolumeClaim'), 'QWTyNDq0dC4=');
    assert.equal(storageVersionHash('', 'v1', 'ConfigMap'), 'qFsyl6wFWjQ=');
    assert.equal(storageVersionHash('apps', 'v1', 'Deployment'), '8aSe+NMegvE=');
  });
});

describe('parseAccept', () => {
  it('keeps the client order for equal clauses and puts higher q and concrete types first', () => {
    const clauses = parseAccept('*/*;q=0.5, application/*, text/plain;q=0.9, application/json;as=Table;g=meta.k8s.io;v=v1');
    assert.deepEqual(
      clauses.map((c) => `${c.type}/${c.subType}`),
      ['application/json', 'application/*', 'text/plain', '*/*'],
    );
    assert.deepEqual(clauses[0]!.params, { as: 'Table', g: 'meta.k8s.io', v: 'v1' });
    assert.equal(clauses[2]!.q, 0.9);
  });
  it('skips malformed ranges', () => {
    assert.deepEqual(
      parseAccept('garbage, application/json').map((c) => c.subType),
      ['json'],
    );
  });
});

describe('compareKubeAwareVersions', () => {
  it('orders as apimachinery documents it', () => {
    const versions = ['foo10', 'v1', 'v10beta3', 'v2', 'v11alpha2', 'v3beta1', 'foo1', 'v12alpha1', 'v11beta2', 'v10'];
    assert.deepEqual(
      versions.sort((a, b) => compareKubeAwareVersions(b, a)),
      ['v10', 'v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10'],
    );
  });
});

describe('negotiateDiscovery', () => {
  it('serves v2beta1 to kubectl 1.27-1.29 and v2 to kubectl 1.30-1.33', () => {
    assert.deepEqual(negotiateDiscovery(ACCEPT_V2BETA1), {
      form: 'aggregated',
      version: 'v2beta1',
      contentType: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
    });
    assert.deepEqual(negotiateDiscovery(ACCEPT_V2), {
      form: 'aggregated',
      version: 'v2',
      contentType: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    });
  });
  it('serves the legacy form to plain JSON, wildcards and no Accept at all', () => {
    for (const accept of [undefined, '', 'application/json', '*/*', 'application/json, */*', 'application/*']) {
      assert.deepEqual(negotiateDiscovery(accept), { form: 'legacy', contentType: 'application/json' }, String(accept));
    }
  });
  it('prefers a later aggregated clause over an earlier plain one (conversions are tried first-acceptable)', () => {
    // apiserver: the plain clause is refused by the discovery restrictions, so the next one wins.
    assert.equal(negotiateDiscovery('application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList').form, 'aggregated');
  });
  it('honours q', () => {
    const neg = negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList');
    assert.equal(neg.form === 'aggregated' && neg.version, 'v2beta1');
  });
  it('refuses other conversions and other media types', () => {
    assert.equal(negotiateDiscovery('application/json;as=Table;v=v1;g=meta.k8s.io').form, 'notAcceptable');
    assert.equal(negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList').form, 'notAcceptable');
    assert.equal(negotiateDiscovery('text/html').form, 'notAcceptable');
  });
});

describe('legacy discovery documents', () => {
  it('/api/v1: resources and subresources sorted by name, as kube-apiserver lists them', () => {
    assert.deepEqual(apiResourceList(TEST_KINDS, '', 'v1'), {
      kind: 'APIResourceList',
      groupVersion: 'v1',
      resources: [
        {
          name: 'books',
          singularName: 'book',
          namespaced: true,
          kind: 'Book',
          verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
          categories: ['all'],
          storageVersionHash: storageVersionHash('', 'v1', 'Book'),
        },
        { name: 'books/status', singularName: '', namespaced: true, kind: 'Book', verbs: ['get', 'patch', 'update'] },
        {
          name: 'shelves',
          singularName: 'shelf',
          namespaced: false,
          kind: 'Shelf',
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
          shortNames: ['sh'],
          storageVersionHash: storageVersionHash('', 'v1', 'Shelf'),
        },
        { name: 'shelves/finalize', singularName: '', namespaced: false, kind: 'Shelf', verbs: ['update'] },
        { name: 'shelves/status', singularName: '', namespaced: false, kind: 'Shelf', verbs: ['get', 'patch', 'update'] },
      ],
    });
  });

  it('keeps the JSON field order of the Go types (kind, apiVersion, groupVersion, resources)', () => {
    const text = JSON.stringify(apiResourceList(TEST_KINDS, 'example.com', 'v1beta1'));
    assert.equal(
      text,
      '{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1beta1","resources":[{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get","list"],"storageVersionHash":"' +
        storageVersionHash('example.com', 'v1beta1', 'Widget') +
        '"}]}',
    );
  });

  it('/api, /apis and /apis/<group>', () => {
    assert.deepEqual(apiVersions(TEST_KINDS, '10.0.0.1:6443'), {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }],
    });
    const example = {
      name: 'example.com',
      versions: [
        { groupVersion: 'example.com/v1', version: 'v1' },
        { groupVersion: 'example.com/v1beta1', version: 'v1beta1' },
      ],
      preferredVersion: { groupVersion: 'example.com/v1', version: 'v1' },
    };
    const storage = {
      name: 'storage.k8s.io',
      versions: [{ groupVersion: 'storage.k8s.io/v1', version: 'v1' }],
      preferredVersion: { groupVersion: 'storage.k8s.io/v1', version: 'v1' },
    };
    assert.deepEqual(apiGroupList(TEST_KINDS), { kind: 'APIGroupList', apiVersion: 'v1', groups: [example, storage] });
    assert.deepEqual(apiGroup(TEST_KINDS, 'example.com'), { kind: 'APIGroup', apiVersion: 'v1', ...example });
    assert.equal(apiGroup(TEST_KINDS, 'nope.io'), undefined);
    assert.equal(apiResourceList(TEST_KINDS, 'example.com', 'v2'), undefined);
  });

  it('matches byte for byte the entries of a real /api/v1 for PersistentVolumeClaim', () => {
    // From a real cluster's GET /api/v1.
    const real =
      '{"name":"persistentvolumeclaims","singularName":"persistentvolumeclaim","namespaced":true,"kind":"PersistentVolumeClaim","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["pvc"],"storageVersionHash":"QWTyNDq0dC4="},{"name":"persistentvolumeclaims/status","singularName":"","namespaced":true,"kind":"PersistentVolumeClaim","verbs":["get","patch","update"]}';
    const list = apiResourceList(BUILTIN_KINDS, '', 'v1')!;
    const ours = list.resources.filter((r) => r.name.startsWith('persistentvolumeclaims')).map((r) => JSON.stringify(r)).join(',');
    assert.equal(ours, real);
    assert.ok(JSON.stringify(list).startsWith('{"kind":"APIResourceList","groupVersion":"v1","resources":['));
  });

  it('lists namespaces/status, namespaces/finalize and persistentvolumeclaims/status for the built-in kinds', () => {
    const list = apiResourceList(BUILTIN_KINDS, '', 'v1')!;
    const byName = new Map(list.resources.map((r) => [r.name, r]));
    assert.deepEqual(byName.get('namespaces/status')?.verbs, ['get', 'patch', 'update']);
    assert.deepEqual(byName.get('namespaces/finalize')?.verbs, ['update']);
    assert.deepEqual(byName.get('persistentvolumeclaims/status')?.verbs, ['get', 'patch', 'update']);
    assert.equal(byName.get('namespaces')?.storageVersionHash, 'Q3oi5N2YM8M=');
    assert.deepEqual(byName.get('namespaces')?.shortNames, ['ns']);
    assert.equal(byName.get('persistentvolumeclaims')?.namespaced, true);
    assert.equal(byName.get('persistentvolumeclaims')?.storageVersionHash, 'QWTyNDq0dC4=');
  });
});

describe('aggregated discovery documents', () => {
  it('/api in apidiscovery.k8s.io/v2: the core group, subresources under their resource', () => {
    const doc = aggregatedDiscovery(TEST_KINDS, 'api', 'v2');
    assert.equal(
      JSON.stringify(doc),
      JSON.stringify({
        kind: 'APIGroupDiscoveryList',
        apiVersion: 'apidiscovery.k8s.io/v2',
        metadata: {},
        items: [
          {
            metadata: { creationTimestamp: null },
            versions: [
              {
                version: 'v1',
                resources: [
                  {
                    resource: 'books',
                    responseKind: { group: '', version: '', kind: 'Book' },
                    scope: 'Namespaced',
                    singularResource: 'book',
                    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
                    categories: ['all'],
                    subresources: [{ subresource: 'status', responseKind: { group: '', version: '', kind: 'Book' }, verbs: ['get', 'patch', 'update'] }],
                  },
                  {
                    resource: 'shelves',
                    responseKind: { group: '', version: '', kind: 'Shelf' },
                    scope: 'Cluster',
                    singularResource: 'shelf',
                    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
                    shortNames: ['sh'],
                    subresources: [
                      { subresource: 'finalize', responseKind: { group: '', version: '', kind: 'Shelf' }, verbs: ['update'] },
                      { subresource: 'status', responseKind: { group: '', version: '', kind: 'Shelf' }, verbs: ['get', 'patch', 'update'] },
                    ],
                  },
                ],
                freshness: 'Current',
              },
            ],
          },
        ],
      }),
    );
  });

  it('/apis in v2beta1: named groups by name, versions preferred first', () => {
    const doc = aggregatedDiscovery(TEST_KINDS, 'apis', 'v2beta1');
    assert.equal(doc.apiVersion, 'apidiscovery.k8s.io/v2beta1');
    assert.deepEqual(
      doc.items.map((g) => [g.metadata.name, g.versions.map((v) => v.version)]),
      [
        ['example.com', ['v1', 'v1beta1']],
        ['storage.k8s.io', ['v1']],
      ],
    );
    assert.deepEqual(doc.items[0]!.metadata, { name: 'example.com', creationTimestamp: null });
    assert.deepEqual(doc.items[0]!.versions[1]!.resources[0]!.verbs, ['get', 'list']);
  });

  it('/apis lists the named groups of the built-in kinds (coordination.k8s.io for Lease, events.k8s.io for Event, RBAC and access reviews)', () => {
    const items = aggregatedDiscovery(BUILTIN_KINDS, 'apis').items;
    assert.deepEqual(items.map((g) => g.metadata.name), [
      'admissionregistration.k8s.io',
      'apiregistration.k8s.io',
      'authentication.k8s.io',
      'authorization.k8s.io',
      'certificates.k8s.io',
      'coordination.k8s.io',
      'events.k8s.io',
      'flowcontrol.apiserver.k8s.io',
      'networking.k8s.io',
      'node.k8s.io',
      'policy',
      'rbac.authorization.k8s.io',
      'scheduling.k8s.io',
      'storage.k8s.io',
    ]);
    const coordination = items.find((g) => g.metadata.name === 'coordination.k8s.io')!;
    assert.deepEqual(coordination.versions.map((v) => v.version), ['v1']);
    assert.deepEqual(coordination.versions[0]!.resources.map((r) => r.resource), ['leases']);
    const reviews = items.find((g) => g.metadata.name === 'authorization.k8s.io')!.versions[0]!.resources;
    assert.deepEqual(reviews.map((r) => [r.resource, r.verbs]), [
      ['localsubjectaccessreviews', ['create']],
      ['selfsubjectaccessreviews', ['create']],
      ['selfsubjectrulesreviews', ['create']],
      ['subjectaccessreviews', ['create']],
    ]);
  });
});

describe('serveDiscovery', () => {
  const serverAddress = '127.0.0.1:6443';

  it('answers aggregated requests with the g/v/as Content-Type, an ETag, Vary and Cache-Control', () => {
    const res = serveDiscovery(TEST_KINDS, { path: '/api', accept: ACCEPT_V2, serverAddress });
    assert.equal(res.status, 200);
    assert.equal(res.headers['Content-Type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.equal(res.headers.Vary, 'Accept');
    assert.equal(res.headers['Cache-Control'], 'public');
    assert.match(res.headers.ETag!, /^"[0-9A-F]{128}"$/);
    assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'APIGroupDiscoveryList');

    const again = serveDiscovery(TEST_KINDS, { path: '/api', accept: ACCEPT_V2, ifNoneMatch: res.headers.ETag, serverAddress });
    assert.equal(again.status, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers.ETag, res.headers.ETag);

    const beta = serveDiscovery(TEST_KINDS, { path: '/apis/', accept: ACCEPT_V2BETA1, serverAddress });
    assert.equal(beta.headers['Content-Type'], 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList');
    assert.equal((JSON.parse(beta.body) as { apiVersion: string }).apiVersion, 'apidiscovery.k8s.io/v2beta1');
  });

  it('answers legacy requests as plain JSON, and 404 / 406 as kube-apiserver does', () => {
    const api = serveDiscovery(TEST_KINDS, { path: '/api', accept: 'application/json', serverAddress });
    assert.equal(api.status, 200);
    assert.deepEqual(api.headers, { 'Content-Type': 'application/json' });
    assert.equal(api.body, '{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]}');

    // Only /api and /apis have an aggregated form.
    const v1 = serveDiscovery(TEST_KINDS, { path: '/api/v1', accept: ACCEPT_V2, serverAddress });
    assert.equal(v1.status, 200);
    assert.equal(v1.headers['Content-Type'], 'application/json');
    assert.equal((JSON.parse(v1.body) as { kind: string }).kind, 'APIResourceList');

    assert.equal(serveDiscovery(TEST_KINDS, { path: '/apis/example.com/', serverAddress }).status, 200);
    assert.equal(serveDiscovery(TEST_KINDS, { path: '/apis/nope.io', serverAddress }).status, 404);
    assert.equal(serveDiscovery(TEST_KINDS, { path: '/api/v2', serverAddress }).status, 404);
    const refused = serveDiscovery(TEST_KINDS, { path: '/apis', accept: 'application/json;as=Table;v=v1;g=meta.k8s.io', serverAddress });
    assert.equal(refused.status, 406);
    assert.equal((JSON.parse(refused.body) as { reason: string }).reason, 'NotAcceptable');
  });
});

const kubectls = kubectlBinaries();

describe('kubectl against the discovery documents', { skip: kubectls.length === 0 ? 'no kubectl.1.xx binaries next to kubectl' : false }, () => {
  let server: FakeServer;
  let legacy: FakeServer;
  before(async () => {
    server = await startFakeServer(TEST_KINDS, TEST_DEFINITIONS);
    legacy = await startFakeServer(BUILTIN_KINDS, ALL_DEFINITIONS, new Map(), { legacyDiscovery: true });
  });
  after(async () => {
    await server.close();
    await legacy.close();
  });

  for (const { version, path } of kubectls) {
    it(`kubectl ${version} api-resources reads the aggregated documents`, async () => {
      server.requests.length = 0;
      const r = await runKubectl(path, server.url, ['api-resources', '-o', 'wide']);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n').map((l) => l.split(/\s{2,}/));
      assert.deepEqual(lines[0], ['NAME', 'SHORTNAMES', 'APIVERSION', 'NAMESPACED', 'KIND', 'VERBS', 'CATEGORIES']);
      assert.match(r.stdout, /^shelves\s+sh\s+v1\s+false\s+Shelf\s+create,delete,get,list,patch,update,watch\s*$/m);
      assert.match(r.stdout, /^books\s+v1\s+true\s+Book\s+create,delete,deletecollection,get,list,patch,update,watch\s+all$/m);
      assert.match(r.stdout, /^widgets\s+example\.com\/v1\s+true\s+Widget\s/m);
      assert.match(r.stdout, /^gadgets\s+storage\.k8s\.io\/v1\s+false\s+Gadget\s/m);
      const minor = Number(version.split('.')[1]);
      const expected = minor >= 30 ? 'v2' : 'v2beta1';
      const discovery = server.requests.filter((q) => q.url.startsWith('/api?') || q.url.startsWith('/apis?'));
      assert.equal(discovery.length, 2, JSON.stringify(server.requests));
      for (const q of discovery) {
        assert.equal(q.accept, minor >= 30 ? ACCEPT_V2 : ACCEPT_V2BETA1);
        assert.equal(q.responseContentType, `application/json;g=apidiscovery.k8s.io;v=${expected};as=APIGroupDiscoveryList`);
      }
      // The aggregated documents carry the resources: no per-group-version requests.
      assert.ok(!server.requests.some((q) => q.url.startsWith('/api/v1') || q.url.startsWith('/apis/')), JSON.stringify(server.requests));
    });
  }

  it('kubectl reads the legacy documents of a server without aggregated discovery', async () => {
    const newest = kubectls[kubectls.length - 1]!;
    legacy.requests.length = 0;
    const r = await runKubectl(newest.path, legacy.url, ['api-resources', '-o', 'wide']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^namespaces\s+ns\s+v1\s+false\s+Namespace\s/m);
    assert.match(r.stdout, /^persistentvolumeclaims\s+pvc\s+v1\s+true\s+PersistentVolumeClaim\s/m);
    assert.ok(legacy.requests.some((q) => q.url.startsWith('/api/v1') && q.responseContentType === 'application/json'));
  });
});
