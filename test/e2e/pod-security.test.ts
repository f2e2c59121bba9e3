/**
 * PodSecurity admission through kubectl against one server this test starts with an audit log and a
 * PodSecurityConfiguration (warn: baseline by default, one exempt namespace and one exempt user):
 * enforce refuses with Kubernetes' wording, warn shows kubectl's "Warning:" lines, audit writes the
 * pod-security.kubernetes.io/audit-violations annotation to the audit log, versions pin the checks, bad
 * labels are refused, and a stricter enforce label is answered with warnings naming existing pods.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const ADMISSION = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1beta1
    kind: PodSecurityConfiguration
    defaults:
      warn: baseline
    exemptions:
      namespaces: [exempt]
      usernames: [trusted]
`;

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: [pods]}]
`;

const pod = (name: string, ns: string, spec = '', container = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
spec:
${spec}  containers:
  - name: app
    image: busybox:1.36
${container}`;

/** A pod the restricted level admits (at every version). */
const RESTRICTED_OK_SPEC = '  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}\n';
const RESTRICTED_OK_CONTAINER = '    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}\n';
const PRIVILEGED_CONTAINER = '    securityContext: {privileged: true}\n';

describe('kubectl: PodSecurity admission', { skip }, () => {
  let c: TestCluster;
  let dir: string;
  let log: string;
  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const refused = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr;
  };
  const namespace = async (name: string, labels: Record<string, string>) => {
    await ok(['create', 'namespace', name]);
    if (Object.keys(labels).length > 0) await ok(['label', 'namespace', name, ...Object.entries(labels).map(([k, v]) => `pod-security.kubernetes.io/${k}=${v}`)]);
  };
  /** The audit events (ResponseComplete) of pod creates named `name`. */
  const podEvents = (name: string): any[] =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l))
      .filter((e) => e.stage === 'ResponseComplete' && e.verb === 'create' && e.objectRef?.resource === 'pods' && e.objectRef?.name === name);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-podsecurity-'));
    log = join(dir, 'audit.log');
    writeFileSync(join(dir, 'admission.yaml'), ADMISSION);
    writeFileSync(join(dir, 'policy.yaml'), POLICY);
    c = await startCluster([
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
      `--audit-policy-file=${join(dir, 'policy.yaml')}`,
      `--audit-log-path=${log}`,
      '--audit-log-mode=blocking',
      '--allow-privileged=true',
    ]);
    await namespace('strict', { enforce: 'restricted' });
    await namespace('pinned', { enforce: 'restricted', 'enforce-version': 'v1.22' });
    await namespace('base', { enforce: 'baseline' });
    await namespace('warned', { warn: 'restricted', 'warn-version': 'v1.22' });
    await namespace('audited', { audit: 'restricted' });
    await namespace('exempt', { enforce: 'restricted' });
    await namespace('plain', {});
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('enforce=restricted refuses a pod with every violation named, as Kubernetes words it', async () => {
    const stderr = await refused(['apply', '-f', '-'], pod('bad', 'strict'));
    assert.match(
      stderr,
      new RegExp(
        escape(
          'pods "bad" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), ' +
            'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), ' +
            'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), ' +
            'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
        ),
      ),
    );
    const admitted = await ok(['apply', '-f', '-'], pod('good', 'strict', RESTRICTED_OK_SPEC, RESTRICTED_OK_CONTAINER));
    assert.doesNotMatch(admitted.stderr, /Warning/);
    await ok(['get', 'pod', 'good', '-n', 'strict']);
  });

  it('the enforce version pins the checks: runAsUser=0 is refused at latest (1.23), not at v1.22', async () => {
    const root = RESTRICTED_OK_SPEC.replace('runAsNonRoot: true,', 'runAsNonRoot: true, runAsUser: 0,');
    const stderr = await refused(['apply', '-f', '-'], pod('root', 'strict', root, RESTRICTED_OK_CONTAINER));
    assert.match(stderr, /violates PodSecurity "restricted:latest": runAsUser=0 \(pod must not set runAsUser=0\)/);
    await ok(['apply', '-f', '-'], pod('root', 'pinned', root, RESTRICTED_OK_CONTAINER));
  });

  it('enforce=baseline refuses host namespaces, host ports, hostPath volumes and privileged containers', async () => {
    const spec = '  hostNetwork: true\n  hostPID: true\n  volumes:\n  - {name: host, hostPath: {path: /tmp}}\n';
    const container = '    securityContext: {privileged: true, capabilities: {add: [NET_ADMIN, CHOWN]}}\n    ports: [{containerPort: 8080, hostPort: 8080}]\n';
    const stderr = await refused(['apply', '-f', '-'], pod('host', 'base', spec, container));
    assert.match(
      stderr,
      new RegExp(
        escape(
          'violates PodSecurity "baseline:latest": non-default capabilities (container "app" must not include "NET_ADMIN" in securityContext.capabilities.add), ' +
            'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "host"), hostPort (container "app" uses hostPort 8080), ' +
            'privileged (container "app" must not set securityContext.privileged=true)',
        ),
      ),
    );
    // Baseline admits what only restricted forbids.
    await ok(['apply', '-f', '-'], pod('plain', 'base'));
  });

  it('warn shows the violations as kubectl warnings and admits the pod', async () => {
    const r = await ok(['apply', '-f', '-'], pod('loose', 'warned', '', PRIVILEGED_CONTAINER));
    assert.match(r.stderr, /Warning: would violate PodSecurity "restricted:v1\.22": privileged \(container "app" must not set securityContext\.privileged=true\), allowPrivilegeEscalation != false/);
    await ok(['get', 'pod', 'loose', '-n', 'warned']);
  });

  it('the configured default (warn: baseline) applies to an unlabelled namespace', async () => {
    const r = await ok(['apply', '-f', '-'], pod('priv', 'plain', '', PRIVILEGED_CONTAINER));
    assert.match(r.stderr, /Warning: would violate PodSecurity "baseline:latest": privileged \(container "app" must not set securityContext\.privileged=true\)/);
    const quiet = await ok(['apply', '-f', '-'], pod('unpriv', 'plain'));
    assert.doesNotMatch(quiet.stderr, /Warning/);
  });

  it('audit records the violations as an audit annotation and admits the pod', async () => {
    await ok(['apply', '-f', '-'], pod('watched', 'audited'));
    const event = await eventually('the audit event of the pod create', () => podEvents('watched')[0]);
    assert.match(
      event.annotations['pod-security.kubernetes.io/audit-violations'],
      /^would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "app" must set securityContext\.allowPrivilegeEscalation=false\), unrestricted capabilities/,
    );
    assert.equal(event.annotations['pod-security.kubernetes.io/enforce-policy'], 'privileged:latest');
    assert.equal(event.responseStatus.code, 201);
  });

  it('exempt namespaces and users are not checked, and the exemption is audited', async () => {
    await ok(['apply', '-f', '-'], pod('free', 'exempt', '', PRIVILEGED_CONTAINER));
    const event = await eventually('the audit event of the exempt pod', () => podEvents('free')[0]);
    assert.equal(event.annotations['pod-security.kubernetes.io/exempt'], 'namespace');
    await refused(['apply', '-f', '-'], pod('asuser', 'strict'));
    await ok(['apply', '--as', 'trusted', '-f', '-'], pod('asuser', 'strict'));
    const byUser = await eventually('the audit event of the pod made by the exempt user', () => podEvents('asuser').find((e) => e.responseStatus.code === 201));
    assert.equal(byUser.annotations['pod-security.kubernetes.io/exempt'], 'user');
  });

  it('refuses bad level and version labels on namespaces', async () => {
    let stderr = await refused(['label', 'namespace', 'plain', 'pod-security.kubernetes.io/enforce=bogus']);
    assert.match(stderr, /metadata\.labels\[pod-security\.kubernetes\.io\/enforce\]: Unsupported value: "bogus": supported values: "privileged", "baseline", "restricted"/);
    stderr = await refused(['create', '-f', '-'], 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: badversion\n  labels: {pod-security.kubernetes.io/audit-version: "1.22"}\n');
    assert.match(stderr, /pod-security\.kubernetes\.io\/audit-version\]: Invalid value: "1\.22"/);
  });

  it('a stricter enforce label is accepted with warnings naming the existing pods that violate it', async () => {
    await ok(['apply', '-f', '-'], pod('loose2', 'warned', '', PRIVILEGED_CONTAINER));
    await ok(['apply', '-f', '-'], pod('fine', 'warned'));
    const r = await ok(['label', 'namespace', 'warned', 'pod-security.kubernetes.io/enforce=baseline']);
    assert.match(r.stderr, /Warning: existing pods in namespace "warned" violate the new PodSecurity enforce level "baseline:latest"/);
    assert.match(r.stderr, /Warning: loose \(and 1 other pod\): privileged/);
    assert.doesNotMatch(r.stderr, /fine/);
    // Relaxing the level says nothing.
    const relaxed = await ok(['label', '--overwrite', 'namespace', 'warned', 'pod-security.kubernetes.io/enforce=privileged']);
    assert.doesNotMatch(relaxed.stderr, /Warning/);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
