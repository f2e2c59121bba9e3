/**
 * Event: one storage seen as core/v1 and events.k8s.io/v1 (conversion both ways, list and watch through
 * the other view), ValidateEventCreate's legacy and strict rules, and expiry after the TTL (storage leases).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import type { KV } from '../../src/storage/interface.js';
import { ResourceStore } from '../../src/registry/store.js';
import type { KObject } from '../../src/registry/kind.js';
import { eventFromCore, eventKind, eventToCore, eventsV1Kind, validateEventCreate } from '../../src/registry/kinds/event/index.js';
import { isStatusError } from '../../src/registry/errors.js';

const CORE: KObject = {
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: 'e1', namespace: 'default' },
  involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' },
  reason: 'Started',
  message: 'Started container',
  source: { component: 'orchlet' },
  count: 1,
  type: 'Normal',
};

describe('event conversion and validation', () => {
  it('converts between core/v1 and events.k8s.io/v1', () => {
    const v1 = eventFromCore(CORE);
    assert.equal(v1.apiVersion, 'events.k8s.io/v1');
    assert.deepEqual(v1['regarding'], CORE['involvedObject']);
    assert.equal(v1['note'], 'Started container');
    assert.deepEqual(v1['deprecatedSource'], { component: 'orchlet' });
    assert.equal(v1['deprecatedCount'], 1);
    assert.deepEqual(eventToCore(v1), CORE);
  });

  it('legacy rules for core/v1, strict ones for events.k8s.io/v1', () => {
    assert.deepEqual(validateEventCreate(CORE, 'v1'), []);
    const wrongNs = { ...CORE, involvedObject: { kind: 'Pod', namespace: 'other', name: 'p' } };
    assert.deepEqual(validateEventCreate(wrongNs, 'v1').map(String), ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']);
    assert.deepEqual(validateEventCreate(CORE, 'events.k8s.io/v1').map(String), [
      'eventTime: Required value',
      'deprecatedCount: Invalid value: "": needs to be unset',
      'deprecatedSource: Invalid value: "": needs to be unset',
    ]);
    const newStyle = { ...CORE, eventTime: '2024-01-01T00:00:00.000000Z', count: undefined, source: undefined, action: 'Start', reportingInstance: 'n1' };
    // As Kubernetes, an empty controller is also checked as a qualified name.
    assert.deepEqual(validateEventCreate(newStyle, 'v1').map(String).slice(0, 2), ['reportingComponent: Required value', 'reportingComponent: Invalid value: "": name part must be non-empty']);
    assert.equal(validateEventCreate(newStyle, 'events.k8s.io/v1').map(String)[0], 'reportingController: Required value');
    assert.deepEqual(validateEventCreate({ ...newStyle, reportingComponent: 'orch.io/orchlet' }, 'events.k8s.io/v1'), []);
  });
});

describe('event storage', () => {
  let kv: KV;
  let core: ResourceStore;
  let v1: ResourceStore;
  const scope = { namespace: 'default' };
  before(async () => {
    kv = await openSqlite({ path: ':memory:' });
    const deps = { kv, prefix: '/registry', featureGates: {}, settings: { eventTTLSeconds: 1 } };
    core = new ResourceStore(eventKind, deps);
    v1 = new ResourceStore(eventsV1Kind, deps);
  });
  after(async () => kv.close());

  it('one storage, two views, watched through the other view', async () => {
    const w = v1.watch(scope, {});
    const created = await core.create(scope, CORE);
    const viewed = await v1.get(scope, 'e1');
    assert.equal(viewed['note'], 'Started container');
    assert.equal(viewed.metadata!.resourceVersion, created.metadata!.resourceVersion);
    const list = await v1.list(scope, { fieldSelector: undefined });
    assert.deepEqual((list.items as KObject[]).map((e) => e.apiVersion), ['events.k8s.io/v1']);
    for await (const ev of w) {
      assert.equal(ev.type, 'ADDED');
      assert.equal(ev.object.apiVersion, 'events.k8s.io/v1');
      assert.equal(ev.object['regarding'].name, 'p');
      break;
    }
    w.close();
  });

  it('expires after the TTL', async () => {
    await core.create(scope, { ...CORE, metadata: { name: 'short', namespace: 'default' } });
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) {
      try {
        await core.get(scope, 'short');
        await new Promise((r) => setTimeout(r, 100));
      } catch (err) {
        gone = isStatusError(err, 'NotFound');
      }
    }
    assert.ok(gone, 'the event expired');
  });
});
