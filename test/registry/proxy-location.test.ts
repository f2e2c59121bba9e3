// Where nodes/proxy, pods/proxy and services/proxy send a request (src/registry/kinds/proxy.ts), with stores
// that answer fixed objects. services/proxy's way through Endpoints is checked here because on a single-machine
// cluster pod IPs are loopback addresses, which Endpoints validation refuses; the proxying itself is tested end
// to end in test/e2e/proxy-subresources.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiErrors, StatusError } from '../../src/registry/errors.js';
import type { KObject, SubresourceContext } from '../../src/registry/kind.js';
import { isProxyableIP, nodeProxyConnector, podProxyConnector, serviceProxyConnector, splitSchemeNamePort } from '../../src/registry/kinds/proxy.js';

type Json = Record<string, any>;

/** A context whose stores answer these objects by resource and name (others are 404s). */
function context(resource: string, objects: Record<string, Record<string, Json>>): SubresourceContext {
  const store = (res: string) => ({
    get: (_scope: unknown, name: string): Promise<KObject> => {
      const o = objects[res]?.[name];
      return o ? Promise.resolve(o as KObject) : Promise.reject(apiErrors.notFound({ group: '', resource: res }, name));
    },
  });
  return { store: store(resource), lookup: (_g: string, r: string) => store(r), scope: { namespace: 'default' }, settings: {} } as unknown as SubresourceContext;
}

async function status(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StatusError, String(err));
    return { code: err.status.code, message: err.status.message ?? '' };
  }
  assert.fail('expected an error');
}

const pod = (name: string, ip: string): Json => ({ metadata: { name, namespace: 'default' }, spec: { containers: [{ name: 'c', ports: [{ containerPort: 8080 }] }] }, status: { podIP: ip, podIPs: [{ ip }] } });

void describe('proxy locations', () => {
  void it('splits scheme, name and port as utilnet.SplitSchemeNamePort', () => {
    assert.deepEqual(splitSchemeNamePort('web'), { scheme: '', name: 'web', port: '' });
    assert.deepEqual(splitSchemeNamePort('web:80'), { scheme: '', name: 'web', port: '80' });
    assert.deepEqual(splitSchemeNamePort('https:web:443'), { scheme: 'https', name: 'web', port: '443' });
    for (const bad of ['ftp:web:80', ':80', 'a:b:c:d', '']) assert.equal(splitSchemeNamePort(bad), undefined, bad);
  });

  void it('proxies to global unicast addresses only, and to loopback only where the server serves on loopback alone', async () => {
    for (const ok of ['10.0.0.1', '192.0.2.1', '2001:db8::1']) assert.ok(isProxyableIP(ok), ok);
    for (const no of ['', 'host', '0.0.0.0', '169.254.1.1', '224.0.0.1', '255.255.255.255', '::', 'fe80::1', 'ff02::1']) assert.ok(!isProxyableIP(no, true), no);
    for (const lo of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) {
      assert.ok(!isProxyableIP(lo), `${lo} refused, as Kubernetes refuses it`);
      assert.ok(isProxyableIP(lo, true), `${lo} allowed on a loopback-only server`);
    }
    // A pod whose IP is the server's own loopback: refused unless the server serves on loopback alone.
    const objects = { pods: { web: pod('web', '127.0.0.1') } };
    assert.deepEqual(await status(podProxyConnector.location(context('pods', objects), 'web', new URLSearchParams())), { code: 400, message: 'address not allowed' });
    const local = { ...context('pods', objects), settings: { proxyToLoopback: true } } as SubresourceContext;
    assert.equal((await podProxyConnector.location(local, 'web', new URLSearchParams()))!.url.href, 'http://127.0.0.1:8080/');
  });

  void it('services: a port number becomes the service port name; the address must be a pod of the namespace with that IP', async () => {
    const svc = { metadata: { name: 'web' }, spec: { ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 81 }] } };
    const eps = {
      metadata: { name: 'web' },
      subsets: [
        {
          addresses: [
            { ip: '10.0.0.9' },
            { ip: '10.0.0.8', targetRef: { kind: 'Pod', namespace: 'other', name: 'a' } },
            { ip: '10.0.0.7', targetRef: { kind: 'Pod', namespace: 'default', name: 'b' } },
            { ip: '10.0.0.1', targetRef: { kind: 'Pod', namespace: 'default', name: 'a' } },
          ],
          ports: [{ name: 'http', port: 8080 }, { name: 'admin', port: 9090 }],
        },
      ],
    };
    // Pod b has another IP; only pod a's address is valid, whichever the random start.
    const ctx = context('services', { services: { web: svc }, endpoints: { web: eps, empty: { metadata: { name: 'empty' } } }, pods: { a: pod('a', '10.0.0.1'), b: pod('b', '10.0.0.2') } });
    for (let i = 0; i < 8; i++) {
      assert.equal((await serviceProxyConnector.location(ctx, 'web:80', new URLSearchParams()))!.url.href, 'http://10.0.0.1:8080/');
      assert.equal((await serviceProxyConnector.location(ctx, 'https:web:admin', new URLSearchParams()))!.url.href, 'https://10.0.0.1:9090/');
    }
    assert.deepEqual(await status(serviceProxyConnector.location(ctx, 'web:82', new URLSearchParams())), { code: 503, message: 'no service port 82 found for service "web"' });
    assert.deepEqual(await status(serviceProxyConnector.location(ctx, 'web', new URLSearchParams())), { code: 503, message: 'no endpoints available for service "web"' });
    assert.deepEqual(await status(serviceProxyConnector.location(ctx, 'empty:x', new URLSearchParams())), { code: 503, message: 'no endpoints available for service "empty"' });
    assert.deepEqual(await status(serviceProxyConnector.location(ctx, 'none:x', new URLSearchParams())), { code: 404, message: 'endpoints "none" not found' });
  });

  void it('pods: the named port or the first container port; no IP is "address not allowed"', async () => {
    const ctx = context('pods', { pods: { a: pod('a', '10.0.0.1'), v6: pod('v6', '2001:db8::5'), pending: { metadata: { name: 'pending' }, spec: { containers: [{ name: 'c' }] } } } });
    assert.equal((await podProxyConnector.location(ctx, 'a', new URLSearchParams()))!.url.href, 'http://10.0.0.1:8080/');
    assert.equal((await podProxyConnector.location(ctx, 'https:a:8443', new URLSearchParams()))!.url.href, 'https://10.0.0.1:8443/');
    assert.equal((await podProxyConnector.location(ctx, 'v6:80', new URLSearchParams()))!.url.href, 'http://[2001:db8::5]/');
    assert.deepEqual(await status(podProxyConnector.location(ctx, 'pending', new URLSearchParams())), { code: 400, message: 'address not allowed' });
    assert.equal((await status(podProxyConnector.location(ctx, 'a:70000', new URLSearchParams()))).code, 503);
  });

  void it('nodes: the agent over its own transport; another port as a plain backend; a link-local node refused', async () => {
    const node = (ip: string): Json => ({ metadata: { name: 'n' }, status: { addresses: [{ type: 'InternalIP', address: ip }], daemonEndpoints: { kubeletEndpoint: { Port: 10250 } } } });
    const ctx = context('nodes', { nodes: { n: node('10.0.0.3'), ll: node('169.254.0.3') } });
    const agent = (await nodeProxyConnector.location(ctx, 'n', new URLSearchParams()))!;
    assert.equal(agent.url.href, 'https://10.0.0.3:10250/');
    assert.equal(agent.agent, true);
    assert.equal((await nodeProxyConnector.location(ctx, 'n:10250', new URLSearchParams()))!.agent, true);
    const other = (await nodeProxyConnector.location(ctx, 'n:9100', new URLSearchParams()))!;
    assert.equal(other.url.href, 'http://10.0.0.3:9100/');
    assert.notEqual(other.agent, true);
    assert.deepEqual(await status(nodeProxyConnector.location(ctx, 'll:9100', new URLSearchParams())), { code: 400, message: 'address not allowed' });
    assert.deepEqual(await status(nodeProxyConnector.location(ctx, 'a:b:c:d', new URLSearchParams())), { code: 400, message: 'invalid node request "a:b:c:d"' });
  });
});
