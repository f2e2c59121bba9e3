import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestTarget } from '../../src/agent/client/client.js';

void describe('the API client request target', () => {
  void it('is what new URL resolves, with or without the plain-path shortcut', () => {
    const paths = [
      '/api/v1/namespaces/default/pods/p-1/status',
      '/api/v1/namespaces/kube-system/events/pod.1a2b3c',
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1',
      '/api/v1/nodes/node:1',
      '/api/v1/namespaces/default/pods/a b',
      '/api/v1/namespaces/default/pods/é',
      '/api/v1/namespaces/default/pods/%41',
      '/api/v1/../v1/pods',
      '/api/v1/./pods',
      '/api/v1/pods/.hidden',
      '//evil/api',
      '/api/v1/pods?x=1',
      '/api/v1/pods#frag',
      '/api/v1/pods/{x}',
      "/api/v1/pods/a'b",
    ];
    const queries = [undefined, {}, { watch: undefined }, { watch: true, resourceVersion: '12', labelSelector: 'a in (b, c)' }];
    for (const server of ['https://127.0.0.1:6443', 'https://127.0.0.1:6443/', 'https://h:1/prefix', 'https://h:1/pre fix/']) {
      const base = new URL(server);
      for (const path of paths) {
        for (const query of queries) {
          const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
          for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
          assert.equal(requestTarget(base, path, query), url.pathname + url.search, `${server} ${path} ${JSON.stringify(query)}`);
        }
      }
    }
  });
});
