/**
 * Server-side apply across the versions of a kind. Each managedFields entry keeps the apiVersion its manager
 * used; Kubernetes converts the object to that version before looking for conflicts and removals, so a
 * field owned through one version conflicts with an apply of the same field through another, and the
 * conflict names the field as the owner's version spells it:
 *   - FlowSchema through flowcontrol.apiserver.k8s.io/v1beta1 and v1beta2 (same shape), with kubectl;
 *   - Event through core/v1 and events.k8s.io/v1, where `message` is `note` (raw requests).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;
const FC = 'flowcontrol.apiserver.k8s.io';

const flowSchema = (version: string, matchingPrecedence: number) =>
  JSON.stringify({
    apiVersion: `${FC}/${version}`,
    kind: 'FlowSchema',
    metadata: { name: 'ssa-fs' },
    spec: { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence },
  });

interface Entry {
  manager: string;
  operation: string;
  apiVersion: string;
  fieldsV1: Record<string, unknown>;
}

describe('server-side apply across API versions', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const entries = async (resource: string, name: string): Promise<Entry[]> =>
    JSON.parse((await k(['get', resource, name, '-o', 'json', '--show-managed-fields'])).stdout).metadata.managedFields;

  it('a field applied through v1beta1 conflicts with an apply of it through v1beta2, until forced', async () => {
    const a = await k(['apply', '--server-side', '--field-manager=team-a', '-f', '-'], flowSchema('v1beta1', 500));
    assert.equal(a.code, 0, a.stderr);
    const owned = (await entries(`flowschemas.v1beta2.${FC}`, 'ssa-fs')).find((e) => e.manager === 'team-a');
    assert.equal(owned?.apiVersion, `${FC}/v1beta1`, 'the entry keeps the version its manager used');
    assert.deepEqual(owned?.fieldsV1, { 'f:spec': { 'f:matchingPrecedence': {}, 'f:priorityLevelConfiguration': { 'f:name': {} } } });

    // The same value through the other version: shared, no conflict.
    const same = await k(['apply', '--server-side', '--field-manager=team-b', '-f', '-'], flowSchema('v1beta2', 500));
    assert.equal(same.code, 0, same.stderr);

    const b = await k(['apply', '--server-side', '--field-manager=team-b', '-f', '-'], flowSchema('v1beta2', 600));
    assert.notEqual(b.code, 0);
    assert.match(b.stderr, /Apply failed with 1 conflict: conflict with "team-a": \.spec\.matchingPrecedence/);

    const forced = await k(['apply', '--server-side', '--field-manager=team-b', '--force-conflicts', '-f', '-'], flowSchema('v1beta2', 600));
    assert.equal(forced.code, 0, forced.stderr);
    const after = await entries(`flowschemas.v1beta1.${FC}`, 'ssa-fs');
    assert.deepEqual(after.find((e) => e.manager === 'team-a')?.fieldsV1, { 'f:spec': { 'f:priorityLevelConfiguration': { 'f:name': {} } } });
    assert.equal(after.find((e) => e.manager === 'team-b')?.apiVersion, `${FC}/v1beta2`);
  });

  it('names an Update manager with the version it wrote through', async () => {
    const p = await k(['patch', `flowschemas.v1beta1.${FC}`, 'ssa-fs', '--type=merge', '-p', '{"spec":{"matchingPrecedence":700}}']);
    assert.equal(p.code, 0, p.stderr);
    const b = await k(['apply', '--server-side', '--field-manager=team-b', '-f', '-'], flowSchema('v1beta2', 600));
    assert.notEqual(b.code, 0);
    assert.match(b.stderr, new RegExp(`conflict with "kubectl-patch" using ${FC.replace(/\./g, '\\.')}/v1beta1: \\.spec\\.matchingPrecedence`));
  });

  it('converts Events between core/v1 and events.k8s.io/v1: note owned through one is message in the other', async () => {
    const applyEvent = (path: string, manager: string, body: unknown, force = false) =>
      c.request('PATCH', `${path}/namespaces/default/events/ssa-ev?fieldManager=${manager}${force ? '&force=true' : ''}`, {
        body: JSON.stringify(body),
        contentType: 'application/apply-patch+yaml',
      });
    const ev = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'ssa-ev', namespace: 'default' },
      eventTime: '2024-01-01T00:00:00.000000Z',
      reportingController: 'example.com/recorder',
      reportingInstance: 'recorder-1',
      action: 'Started',
      reason: 'Started',
      type: 'Normal',
      note: 'hello',
      regarding: { kind: 'Pod', name: 'p', namespace: 'default' },
    };
    const created = await applyEvent('/apis/events.k8s.io/v1', 'recorder', ev);
    assert.equal(created.status, 201, created.text);

    const core = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'ssa-ev', namespace: 'default' }, message: 'changed' };
    const conflict = await applyEvent('/api/v1', 'other', core);
    assert.equal(conflict.status, 409, conflict.text);
    assert.equal(conflict.json.message, 'Apply failed with 1 conflict: conflict with "recorder": .note');
    assert.deepEqual(conflict.json.details.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "recorder"', field: '.note' }]);

    const forced = await applyEvent('/api/v1', 'other', core, true);
    assert.equal(forced.status, 200, forced.text);
    assert.equal(forced.json.message, 'changed');
    const recorder = forced.json.metadata.managedFields.find((e: Entry) => e.manager === 'recorder');
    assert.equal(recorder.apiVersion, 'events.k8s.io/v1');
    assert.equal(recorder.fieldsV1['f:note'], undefined, 'the forced field left its events.k8s.io/v1 owner');
    assert.deepEqual(recorder.fieldsV1['f:reason'], {});

  });
});
