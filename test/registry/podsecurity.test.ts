/**
 * The Pod Security Standards table (every baseline and restricted check, with its reason and detail as
 * Kubernetes 1.23 words them, and the versions that pin them), the label and configuration parsing, and the
 * PodSecurity plugin on pod controllers' templates (warn and audit only; orch serves no workload kinds yet,
 * so these are driven with a declared Deployment-like resource).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, forbiddenDetail, LATEST, type Json, type Level, type Version } from '../../src/registry/admission/podsecurity/checks.js';
import { parsePodSecurityConfig, policyFromLabels, PRIVILEGED_POLICY, policyString } from '../../src/registry/admission/podsecurity/policy.js';
import { podSecurity } from '../../src/registry/admission/podsecurity/index.js';
import type { AdmissionAttributes, ResourceStore } from '../../src/registry/store.js';
import type { KindDecl, KObject } from '../../src/registry/kind.js';

/** A pod spec that passes restricted at every version. */
const restricted = (): Json => ({
  securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [{ name: 'app', image: 'x', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
});

const detail = (level: Level, spec: Json, meta: Json = {}, version: Version = LATEST) => forbiddenDetail(evaluate(level, version, meta, spec));

describe('Pod Security Standards checks (1.23)', () => {
  it('admits the restricted pod at every level, and anything at privileged', () => {
    for (const level of ['privileged', 'baseline', 'restricted'] as const) assert.equal(detail(level, restricted()), '');
    assert.equal(detail('privileged', { hostNetwork: true, containers: [{ name: 'a', securityContext: { privileged: true } }] }), '');
  });

  const cases: { name: string; level: Level; change: (s: Json, m: Json) => void; want: string }[] = [
    { name: 'host namespaces', level: 'baseline', change: (s) => Object.assign(s, { hostIPC: true, hostPID: true }), want: 'host namespaces (hostPID=true, hostIPC=true)' },
    {
      name: 'privileged',
      level: 'baseline',
      change: (s) => (s.containers[0].securityContext.privileged = true),
      want: 'privileged (container "app" must not set securityContext.privileged=true)',
    },
    {
      name: 'capabilities (baseline)',
      level: 'baseline',
      change: (s) => (s.containers[0].securityContext.capabilities.add = ['SYS_ADMIN', 'CHOWN', 'NET_RAW']),
      want: 'non-default capabilities (container "app" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add)',
    },
    { name: 'hostPath', level: 'baseline', change: (s) => (s.volumes = [{ name: 'h', hostPath: { path: '/' } }, { name: 'e', emptyDir: {} }]), want: 'hostPath volumes (volume "h")' },
    {
      name: 'host ports',
      level: 'baseline',
      change: (s) => s.containers.push({ name: 'b', image: 'x', ports: [{ containerPort: 1, hostPort: 81 }, { containerPort: 2, hostPort: 82 }] }),
      want: 'hostPort (container "b" uses hostPorts 81, 82)',
    },
    {
      name: 'AppArmor',
      level: 'baseline',
      change: (_s, m) => (m.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined', 'container.apparmor.security.beta.kubernetes.io/b': 'runtime/default' }),
      want: 'forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/app="unconfined")',
    },
    {
      name: 'SELinux',
      level: 'baseline',
      change: (s) => {
        s.securityContext.seLinuxOptions = { type: 'spc_t', user: 'root' };
        s.containers[0].securityContext.seLinuxOptions = { role: 'r' };
      },
      want: 'seLinuxOptions (pod and container "app" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set)',
    },
    {
      name: 'procMount',
      level: 'baseline',
      change: (s) => (s.containers[0].securityContext.procMount = 'Unmasked'),
      want: 'procMount (container "app" must not set securityContext.procMount to "Unmasked")',
    },
    {
      name: 'seccomp (baseline)',
      level: 'baseline',
      change: (s) => (s.securityContext.seccompProfile = { type: 'Unconfined' }),
      want: 'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
    },
    {
      name: 'sysctls',
      level: 'baseline',
      change: (s) => (s.securityContext.sysctls = [{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'kernel.msgmax', value: '1' }]),
      want: 'forbidden sysctls (kernel.msgmax)',
    },
    {
      name: 'hostProcess',
      level: 'baseline',
      change: (s) => (s.securityContext.windowsOptions = { hostProcess: true }),
      want: 'hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)',
    },
    {
      name: 'volume types',
      level: 'restricted',
      change: (s) => (s.volumes = [{ name: 'n', nfs: { server: 's', path: '/' } }, { name: 'g', gitRepo: { repository: 'r' } }, { name: 'ok', secret: { secretName: 's' } }]),
      want: 'restricted volume types (volumes "n", "g" use restricted volume types "gitRepo", "nfs")',
    },
    {
      name: 'allowPrivilegeEscalation',
      level: 'restricted',
      change: (s) => delete s.containers[0].securityContext.allowPrivilegeEscalation,
      want: 'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)',
    },
    {
      name: 'capabilities (restricted)',
      level: 'restricted',
      change: (s) => (s.containers[0].securityContext.capabilities = { add: ['NET_BIND_SERVICE', 'CHOWN'] }),
      want: 'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]; container "app" must not include "CHOWN" in securityContext.capabilities.add)',
    },
    {
      name: 'runAsNonRoot false',
      level: 'restricted',
      change: (s) => (s.containers[0].securityContext.runAsNonRoot = false),
      want: 'runAsNonRoot != true (container "app" must not set securityContext.runAsNonRoot=false)',
    },
    {
      name: 'runAsNonRoot unset',
      level: 'restricted',
      change: (s) => delete s.securityContext.runAsNonRoot,
      want: 'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)',
    },
    { name: 'runAsUser 0', level: 'restricted', change: (s) => (s.containers[0].securityContext.runAsUser = 0), want: 'runAsUser=0 (container "app" must not set runAsUser=0)' },
    {
      name: 'seccomp (restricted)',
      level: 'restricted',
      change: (s) => (s.containers[0].securityContext.seccompProfile = { type: 'Unconfined' }),
      // 1.23 has no check overrides yet: at restricted, the baseline seccomp check reports Unconfined too.
      want:
        'seccompProfile (container "app" must not set securityContext.seccompProfile.type to "Unconfined"), ' +
        'seccompProfile (container "app" must not set securityContext.seccompProfile.type to "Unconfined")',
    },
  ];
  for (const c of cases) {
    it(`${c.level}: ${c.name}`, () => {
      const spec = restricted();
      const meta: Json = {};
      c.change(spec, meta);
      assert.equal(detail(c.level, spec, meta), c.want);
      if (c.level === 'restricted' && c.name !== 'seccomp (restricted)') assert.equal(detail('baseline', spec, meta), '', 'a restricted-only check does not run at baseline');
    });
  }

  it('reports every failed check in order: baseline ones first, each level sorted by check', () => {
    const spec: Json = { hostNetwork: true, containers: [{ name: 'a', image: 'x', securityContext: { privileged: true } }] };
    assert.equal(
      detail('restricted', spec),
      'host namespaces (hostNetwork=true), privileged (container "a" must not set securityContext.privileged=true), ' +
        'allowPrivilegeEscalation != false (container "a" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "a" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
  });

  it('versions pin the checks: runAsUser from 1.23, capabilities from 1.22, seccomp fields from 1.19 (annotations before)', () => {
    const spec = restricted();
    spec.containers[0].securityContext.runAsUser = 0;
    delete spec.containers[0].securityContext.capabilities;
    assert.match(detail('restricted', spec, {}, [1, 23]), /runAsUser=0/);
    assert.doesNotMatch(detail('restricted', spec, {}, [1, 22]), /runAsUser/);
    assert.match(detail('restricted', spec, {}, [1, 22]), /unrestricted capabilities/);
    assert.equal(detail('restricted', spec, {}, [1, 21]), '');
    const old = restricted();
    delete old.securityContext.seccompProfile;
    assert.match(detail('restricted', old, {}, [1, 18]), /must set seccomp annotations/);
    assert.equal(detail('restricted', old, { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'runtime/default' } }, [1, 18]), '');
  });
});

describe('Pod Security labels and configuration', () => {
  it('reads levels and versions, reports bad ones and evaluates them as restricted:latest', () => {
    const { policy, errors } = policyFromLabels(
      {
        'pod-security.kubernetes.io/enforce': 'baseline',
        'pod-security.kubernetes.io/enforce-version': 'v1.22',
        'pod-security.kubernetes.io/warn': 'strict',
        'pod-security.kubernetes.io/audit-version': 'v1.99',
      },
      PRIVILEGED_POLICY,
    );
    assert.equal(policyString(policy.enforce), 'baseline:v1.22');
    assert.equal(policyString(policy.warn), 'restricted:latest');
    assert.equal(policy.audit.level, 'privileged');
    assert.deepEqual(policy.audit.version, LATEST, 'a version newer than the table is evaluated as latest');
    assert.deepEqual(
      errors.map((e) => e.toString()),
      ['metadata.labels[pod-security.kubernetes.io/warn]: Unsupported value: "strict": supported values: "privileged", "baseline", "restricted"'],
    );
  });

  it('parses PodSecurityConfiguration v1alpha1 and v1beta1 and refuses bad ones', () => {
    const cfg = parsePodSecurityConfig(
      {
        apiVersion: 'pod-security.admission.config.k8s.io/v1alpha1',
        kind: 'PodSecurityConfiguration',
        defaults: { enforce: 'baseline', 'audit-version': 'v1.20' },
        exemptions: { usernames: ['u'], runtimeClasses: ['kata'] },
      },
      'test',
    );
    assert.equal(policyString(cfg.defaults.enforce), 'baseline:latest');
    assert.equal(policyString(cfg.defaults.audit), 'privileged:v1.20');
    assert.deepEqual(cfg.exemptions, { usernames: ['u'], namespaces: [], runtimeClasses: ['kata'] });
    assert.throws(
      () => parsePodSecurityConfig({ apiVersion: 'pod-security.admission.config.k8s.io/v1beta1', kind: 'PodSecurityConfiguration', defaults: { warn: 'nope' } }, 'f'),
      /defaults\.warn: Unsupported value: "nope"/,
    );
    assert.throws(() => parsePodSecurityConfig({ apiVersion: 'v1', kind: 'Other' }, 'f'), /expected kind PodSecurityConfiguration/);
  });
});

describe('PodSecurity on pod controllers', () => {
  const deployments = { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments', namespaced: true } as unknown as KindDecl;
  const ns: KObject = { metadata: { name: 'ns', labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'baseline' } } };
  // A namespace store as the plugin's lister reads it: a list, a watch that stays open, and write observers.
  const namespaceStore = {
    decl: { namespaced: false },
    observeWrites: () => () => undefined,
    get: async () => ns,
    list: async () => ({ metadata: { resourceVersion: '1' }, items: [{ ...ns, metadata: { ...ns.metadata, resourceVersion: '1' } }] }),
    watch: () => ({ close: () => undefined, [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }) }),
  } as unknown as ResourceStore;
  const plugin = podSecurity({
    namespaces: () => namespaceStore,
    pods: () => undefined,
    config: {
      defaults: PRIVILEGED_POLICY,
      exemptions: { usernames: [], namespaces: [], runtimeClasses: ['kata'] },
    },
  });
  const attrs = (spec: Json): AdmissionAttributes & { notes: Record<string, string> } => {
    const notes: Record<string, string> = {};
    return {
      operation: 'CREATE',
      decl: deployments,
      namespace: 'ns',
      name: 'd',
      subresource: '',
      object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { metadata: {}, spec } } },
      dryRun: false,
      warnings: [],
      annotate: (k, v) => (notes[k] = v),
      notes,
    };
  };

  it('warns and audits a violating template but never refuses it (enforce applies to pods only)', async () => {
    const a = attrs({ hostNetwork: true, containers: [{ name: 'c', image: 'x' }] });
    await plugin.validate!(a);
    assert.deepEqual(a.warnings, ['would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)']);
    assert.equal(a.notes['pod-security.kubernetes.io/enforce-policy'], undefined);
  });

  it('skips templates of an exempt runtime class', async () => {
    const a = attrs({ runtimeClassName: 'kata', hostNetwork: true, containers: [{ name: 'c', image: 'x' }] });
    await plugin.validate!(a);
    assert.deepEqual(a.warnings, []);
    assert.equal(a.notes['pod-security.kubernetes.io/exempt'], 'runtimeClass');
  });
});

describe('PodSecurity on namespaces', () => {
  const namespaces = { group: '', version: 'v1', kind: 'Namespace', resource: 'namespaces', namespaced: false } as unknown as KindDecl;
  const plugin = podSecurity({ namespaces: () => undefined, pods: () => undefined });
  const ns = (labels: Record<string, string>): KObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', labels } });
  const update = (labels: Record<string, string>, old: Record<string, string>): AdmissionAttributes => ({
    operation: 'UPDATE',
    decl: namespaces,
    namespace: '',
    name: 'n',
    subresource: '',
    object: ns(labels),
    oldObject: ns(old),
    dryRun: false,
    warnings: [],
    annotate: () => {},
  });

  it('refuses a bad label, but lets an update through that keeps the same bad labels', async () => {
    const bad = { 'pod-security.kubernetes.io/enforce': 'bogus' };
    await assert.rejects(plugin.validate!(update(bad, {})), /Namespace "n" is invalid: metadata\.labels\[pod-security\.kubernetes\.io\/enforce\]: Unsupported value: "bogus"/);
    await plugin.validate!(update({ ...bad, other: 'x' }, bad));
    await assert.rejects(plugin.validate!(update({ ...bad, 'pod-security.kubernetes.io/warn-version': 'x' }, bad)), /warn-version\]: Invalid value: "x"/);
  });
});
