/**
 * The optional admission plugins of document 2, through kubectl (and raw requests where kubectl has no
 * verb) against one server started with all of them enabled (a second, small one for AlwaysDeny and
 * NamespaceExists without NamespaceLifecycle): NamespaceAutoProvision, AlwaysPullImages,
 * DenyServiceExternalIPs, ExtendedResourceToleration, LimitPodHardAntiAffinityTopology, PodNodeSelector
 * (configuration file and namespace annotation), PodTolerationRestriction (namespace annotations),
 * SecurityContextDeny, NodeRestriction (as a node user through impersonation), RuntimeClass and
 * DefaultIngressClass (with their kinds), PersistentVolumeLabel and AlwaysAdmit (accepted), AlwaysDeny and
 * NamespaceExists; a third server with RBAC for OwnerReferencesPermissionEnforcement, EventRateLimit and
 * ImagePolicyWebhook (a backend the test serves over TLS on loopback); a fourth for PodSecurityPolicy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { stringify } from 'yaml';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const PLUGINS = [
  'AlwaysAdmit',
  'NamespaceAutoProvision',
  'AlwaysPullImages',
  'DenyServiceExternalIPs',
  'ExtendedResourceToleration',
  'LimitPodHardAntiAffinityTopology',
  'PodNodeSelector',
  'PodTolerationRestriction',
  'SecurityContextDeny',
  'NodeRestriction',
  'PersistentVolumeLabel',
];

const ADMISSION = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodNodeSelector
  configuration:
    podNodeSelectorPluginConfig:
      listed: "env=prod"
- name: PodTolerationRestriction
  configuration:
    apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
    kind: Configuration
    whitelist:
    - {operator: Exists, effect: NoSchedule}
    - {operator: Exists, effect: NoExecute}
`;

const pod = (name: string, ns: string, spec = '', container = '', meta = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
${meta}spec:
${spec}  containers:
  - name: app
    image: busybox:1.36
${container}`;

describe('kubectl: optional admission plugins', { skip }, () => {
  let c: TestCluster;
  let dir: string;
  const run = (args: string[], input?: string) => c.kubectl(args, input === undefined ? {} : { input });
  const ok = async (args: string[], input?: string) => {
    const r = await run(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));
  const refused = async (args: string[], input?: string) => {
    const r = await run(args, input);
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr;
  };
  const AS_NODE = ['--as', 'system:node:n1', '--as-group', 'system:nodes', '--as-group', 'system:authenticated'];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-admission-plugins-'));
    writeFileSync(join(dir, 'admission.yaml'), ADMISSION);
    c = await startCluster([`--enable-admission-plugins=${PLUGINS.join(',')}`, `--admission-control-config-file=${join(dir, 'admission.yaml')}`]);
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('NamespaceAutoProvision creates the namespace of an object created in a missing one', async () => {
    await refused(['get', 'namespace', 'auto']);
    await ok(['create', 'configmap', 'cm', '-n', 'auto', '--from-literal=a=b']);
    const ns = await json(['get', 'namespace', 'auto']);
    assert.equal(ns.status.phase, 'Active');
    // Not for dry runs: the object is then refused (NamespaceLifecycle) and no namespace is made.
    assert.match(await refused(['create', 'configmap', 'cm', '-n', 'dry', '--from-literal=a=b', '--dry-run=server']), /namespaces "dry" not found/);
    await refused(['get', 'namespace', 'dry']);
  });

  it('AlwaysPullImages sets imagePullPolicy Always on every container', async () => {
    await ok(['apply', '-f', '-'], pod('pull', 'default', '  initContainers:\n  - {name: init, image: busybox:1.36, imagePullPolicy: Never}\n', '    imagePullPolicy: IfNotPresent\n'));
    const p = await json(['get', 'pod', 'pull']);
    assert.equal(p.spec.containers[0].imagePullPolicy, 'Always');
    assert.equal(p.spec.initContainers[0].imagePullPolicy, 'Always');
  });

  it('DenyServiceExternalIPs refuses services with external IPs', async () => {
    const svc = (ips: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec:\n  ports: [{port: 80}]\n${ips}`;
    const stderr = await refused(['apply', '-f', '-'], svc('  externalIPs: [192.0.2.10]\n'));
    assert.match(stderr, /services "ext" is forbidden: use of external IPs is denied by admission control/);
    await ok(['apply', '-f', '-'], svc(''));
  });

  it('ExtendedResourceToleration tolerates the taints of requested extended resources', async () => {
    const res = '    resources: {requests: {example.com/gpu: "1"}, limits: {example.com/gpu: "1"}}\n';
    await ok(['apply', '-f', '-'], pod('gpu', 'default', '', res));
    const p = await json(['get', 'pod', 'gpu']);
    assert.ok(
      p.spec.tolerations.some((t: any) => t.key === 'example.com/gpu' && t.operator === 'Exists' && t.effect === 'NoSchedule'),
      JSON.stringify(p.spec.tolerations),
    );
  });

  it('LimitPodHardAntiAffinityTopology allows only kubernetes.io/hostname in required anti-affinity', async () => {
    const affinity = (key: string) =>
      `  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: ${key}, labelSelector: {matchLabels: {app: x}}}\n`;
    const stderr = await refused(['apply', '-f', '-'], pod('anti', 'default', affinity('topology.kubernetes.io/zone')));
    assert.match(
      stderr,
      /pods "anti" is forbidden: affinity\.PodAntiAffinity\.RequiredDuringScheduling has TopologyKey topology\.kubernetes\.io\/zone but only key kubernetes\.io\/hostname is allowed/,
    );
    await ok(['apply', '-f', '-'], pod('anti', 'default', affinity('kubernetes.io/hostname')));
  });

  it('SecurityContextDeny refuses pods that set runAsUser, fsGroup or seLinuxOptions', async () => {
    let stderr = await refused(['apply', '-f', '-'], pod('sc', 'default', '  securityContext: {runAsUser: 1000}\n'));
    assert.match(stderr, /pods "sc" is forbidden: pod\.Spec\.SecurityContext\.RunAsUser is forbidden/);
    stderr = await refused(['apply', '-f', '-'], pod('sc', 'default', '', '    securityContext: {seLinuxOptions: {level: "s0"}}\n'));
    assert.match(stderr, /pods "sc" is forbidden: SecurityContext\.SELinuxOptions is forbidden/);
    await ok(['apply', '-f', '-'], pod('sc', 'default', '  securityContext: {runAsNonRoot: true}\n'));
  });

  it('PodNodeSelector merges the namespace selector and enforces the configured whitelist', async () => {
    await ok(['create', 'namespace', 'sel']);
    await ok(['annotate', 'namespace', 'sel', 'scheduler.alpha.kubernetes.io/node-selector=env=prod,tier=web']);
    await ok(['apply', '-f', '-'], pod('merged', 'sel', '  nodeSelector: {disk: ssd}\n'));
    const p = await json(['get', 'pod', 'merged', '-n', 'sel']);
    assert.deepEqual(p.spec.nodeSelector, { env: 'prod', tier: 'web', disk: 'ssd' });
    let stderr = await refused(['apply', '-f', '-'], pod('clash', 'sel', '  nodeSelector: {env: dev}\n'));
    assert.match(stderr, /pods "clash" is forbidden: pod node label selector conflicts with its namespace node label selector/);
    await ok(['create', 'namespace', 'listed']);
    await ok(['apply', '-f', '-'], pod('inlist', 'listed', '  nodeSelector: {env: prod}\n'));
    stderr = await refused(['apply', '-f', '-'], pod('outlist', 'listed', '  nodeSelector: {disk: ssd}\n'));
    assert.match(stderr, /pods "outlist" is forbidden: pod node label selector labels conflict with its namespace whitelist/);
  });

  it('PodTolerationRestriction merges namespace default tolerations as MergeTolerations and enforces the namespace or cluster whitelist', async () => {
    await ok(['create', 'namespace', 'tol']);
    await ok([
      'annotate',
      'namespace',
      'tol',
      'scheduler.alpha.kubernetes.io/defaultTolerations=[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"},{"key":"zone","operator":"Equal","value":"a"}]',
      'scheduler.alpha.kubernetes.io/tolerationsWhitelist=[{"key":"dedicated","operator":"Exists"},{"key":"zone","operator":"Exists"},{"key":"node.kubernetes.io/not-ready","operator":"Exists"},{"key":"node.kubernetes.io/unreachable","operator":"Exists"},{"key":"node.kubernetes.io/memory-pressure","operator":"Exists"}]',
    ]);
    // The pod's dedicated=team:NoSchedule is covered by the namespace's dedicated:NoSchedule (Exists) and dropped;
    // its zone=a with effect NoExecute is covered by the namespace's zone=a (any effect) and dropped too.
    await ok(
      ['apply', '-f', '-'],
      pod(
        'tolerant',
        'tol',
        '  tolerations:\n  - {key: dedicated, operator: Equal, value: team, effect: NoSchedule}\n  - {key: zone, operator: Equal, value: a, effect: NoExecute}\n',
        '    resources: {requests: {memory: 10Mi}}\n',
      ),
    );
    const p = await json(['get', 'pod', 'tolerant', '-n', 'tol']);
    const shown = p.spec.tolerations.map((t: any) => [t.key, t.operator, t.value ?? '', t.effect ?? '', t.tolerationSeconds ?? ''].join(':'));
    // The pod's own first (DefaultTolerationSeconds ran before), then the namespace's and memory-pressure.
    assert.deepEqual(shown, [
      'node.kubernetes.io/not-ready:Exists::NoExecute:300',
      'node.kubernetes.io/unreachable:Exists::NoExecute:300',
      'dedicated:Exists::NoSchedule:',
      'zone:Equal:a::',
      'node.kubernetes.io/memory-pressure:Exists::NoSchedule:',
    ]);
    // Refusals are Go errors in Kubernetes: a 500 Status with the message alone.
    let stderr = await refused(['apply', '-f', '-'], pod('intolerant', 'tol', '  tolerations: [{key: other, operator: Exists}]\n'));
    assert.equal(
      stderr.trim(),
      'Error from server: error when creating "STDIN": pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist',
    );
    // A namespace without a whitelist annotation: the configuration's cluster whitelist (NoSchedule and NoExecute only).
    await ok(['create', 'namespace', 'tol-cluster']);
    await ok(['apply', '-f', '-'], pod('cluster-ok', 'tol-cluster', '  tolerations: [{key: any, operator: Exists, effect: NoSchedule}]\n'));
    stderr = await refused(['apply', '-f', '-'], pod('cluster-no', 'tol-cluster', '  tolerations: [{key: any, operator: Exists, effect: PreferNoSchedule}]\n'));
    assert.equal(
      stderr.trim(),
      'Error from server: error when creating "STDIN": pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist',
    );
  });

  it('RuntimeClass: the kind, and pods naming a class get its overhead, node selector and tolerations', async () => {
    await ok(['apply', '-f', '-'], `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: sandboxed}
handler: runsc
overhead: {podFixed: {cpu: 250m, memory: 64Mi}}
scheduling:
  nodeSelector: {sandbox: "true"}
  tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]
`);
    const table = await ok(['get', 'runtimeclass', 'sandboxed']);
    assert.match(table, /^NAME\s+HANDLER\s+AGE\nsandboxed\s+runsc\s+\S+\n$/);
    await ok(['apply', '-f', '-'], pod('sandboxed', 'default', '  runtimeClassName: sandboxed\n  nodeSelector: {disk: ssd}\n'));
    const p = await json(['get', 'pod', 'sandboxed']);
    assert.deepEqual(p.spec.overhead, { cpu: '250m', memory: '64Mi' });
    assert.deepEqual(p.spec.nodeSelector, { disk: 'ssd', sandbox: 'true' });
    assert.ok(p.spec.tolerations.some((t: any) => t.key === 'sandbox' && t.effect === 'NoSchedule'), JSON.stringify(p.spec.tolerations));
    let stderr = await refused(['apply', '-f', '-'], pod('noclass', 'default', '  runtimeClassName: nope\n'));
    assert.match(stderr, /pods "noclass" is forbidden: pod rejected: RuntimeClass "nope" not found/);
    stderr = await refused(['apply', '-f', '-'], pod('clash', 'default', '  runtimeClassName: sandboxed\n  nodeSelector: {sandbox: "false"}\n'));
    assert.match(stderr, /conflict: runtimeClass\.scheduling\.nodeSelector\[sandbox\] = true; pod\.spec\.nodeSelector\[sandbox\] = false/);
    stderr = await refused(['apply', '-f', '-'], pod('overhead', 'default', '  overhead: {cpu: 1}\n'));
    assert.match(stderr, /pod rejected: Overhead set without corresponding RuntimeClass defined Overhead/);
    stderr = await refused(['patch', 'runtimeclass', 'sandboxed', '--type=merge', '-p', '{"handler":"runc"}']);
    assert.match(stderr, /handler: Invalid value: "runc": field is immutable/);
  });

  it('DefaultIngressClass: IngressClass and Ingress kinds, and new Ingresses get the default class', async () => {
    const ingress = (name: string, extra = '') => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}}
spec:
${extra}  rules:
  - host: www.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
`;
    await ok(['apply', '-f', '-'], ingress('before'));
    assert.equal((await json(['get', 'ingress', 'before'])).spec.ingressClassName, undefined);
    await ok(['apply', '-f', '-'], `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
`);
    const table = await ok(['get', 'ingressclass', 'nginx']);
    assert.match(table, /^NAME\s+CONTROLLER\s+PARAMETERS\s+AGE\nnginx\s+k8s\.io\/ingress-nginx\s+IngressParameters\.k8s\.example\.com\/external-lb\s+\S+\n$/);
    assert.equal((await json(['get', 'ingressclass', 'nginx'])).spec.parameters.scope, 'Cluster');
    await ok(['apply', '-f', '-'], ingress('after'));
    assert.equal((await json(['get', 'ingress', 'after'])).spec.ingressClassName, 'nginx');
    assert.match(await ok(['get', 'ingress', 'after']), /^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nafter\s+nginx\s+www\.example\.com\s+80\s+\S+\n$/);
    await ok(['apply', '-f', '-'], ingress('explicit', '  ingressClassName: other\n'));
    assert.equal((await json(['get', 'ingress', 'explicit'])).spec.ingressClassName, 'other');
    let stderr = await refused(['apply', '-f', '-'], ingress('bad').replace('pathType: Prefix', 'pathType: Nope'));
    assert.match(stderr, /spec\.rules\[0\]\.http\.paths\[0\]\.pathType: Unsupported value: "Nope"/);
    stderr = await refused(['patch', 'ingressclass', 'nginx', '--type=merge', '-p', '{"spec":{"controller":"example.com/other"}}']);
    assert.match(stderr, /spec\.controller: Invalid value: "example\.com\/other": field is immutable/);
    await ok(['apply', '-f', '-'], `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: second
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: example.com/second}
`);
    stderr = await refused(['apply', '-f', '-'], ingress('twodefaults'));
    assert.match(stderr, /ingresses\.networking\.k8s\.io "twodefaults" is forbidden: Internal error occurred: 2 default IngressClasses were found, only 1 allowed/);
  });

  describe('NodeRestriction (as system:node:n1)', () => {
    it('a node may write only its own Node, and not restricted labels or taints', async () => {
      const node = (name: string, labels = '') => `apiVersion: v1\nkind: Node\nmetadata:\n  name: ${name}\n${labels}`;
      await ok([...AS_NODE, 'create', '-f', '-'], node('n1', '  labels: {kubernetes.io/hostname: n1, example.com/rack: r1}\n'));
      let stderr = await refused([...AS_NODE, 'create', '-f', '-'], node('n2'));
      assert.match(stderr, /nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"/);
      stderr = await refused([...AS_NODE, 'create', '-f', '-'], node('n1b'));
      assert.match(stderr, /node "n1" is not allowed to modify node "n1b"/);
      stderr = await refused([...AS_NODE, 'label', 'node', 'n1', 'node-restriction.kubernetes.io/trusted=yes']);
      assert.match(stderr, /nodes "n1" is forbidden: is not allowed to modify labels: node-restriction\.kubernetes\.io\/trusted/);
      stderr = await refused([...AS_NODE, 'label', 'node', 'n1', 'kubernetes.io/role=master']);
      assert.match(stderr, /is not allowed to modify labels: kubernetes\.io\/role/);
      await ok([...AS_NODE, 'label', 'node', 'n1', 'node.kubernetes.io/pool=a', 'example.com/rack=r2', '--overwrite']);
      stderr = await refused([...AS_NODE, 'taint', 'node', 'n1', 'k=v:NoSchedule']);
      assert.match(stderr, /node "n1" is not allowed to modify taints/);
      // The admin may.
      await ok(['label', 'node', 'n1', 'node-restriction.kubernetes.io/trusted=yes']);
    });

    it('a node may create only mirror pods bound to itself, and delete and evict only its own pods', async () => {
      const mirror = "  annotations: {kubernetes.io/config.mirror: abc}\n";
      let stderr = await refused([...AS_NODE, 'create', '-f', '-'], pod('plain', 'default', '  nodeName: n1\n'));
      assert.match(stderr, /pods "plain" is forbidden: pod does not have "kubernetes\.io\/config\.mirror" annotation, node "n1" can only create mirror pods/);
      stderr = await refused([...AS_NODE, 'create', '-f', '-'], pod('elsewhere', 'default', '  nodeName: n2\n', '', mirror));
      assert.match(stderr, /node "n1" can only create pods with spec\.nodeName set to itself/);
      stderr = await refused([...AS_NODE, 'create', '-f', '-'], pod('secretive', 'default', '  nodeName: n1\n  volumes: [{name: s, secret: {secretName: x}}]\n', '', mirror));
      assert.match(stderr, /node "n1" can not create pods that reference secrets/);
      await ok([...AS_NODE, 'create', '-f', '-'], pod('static', 'default', '  nodeName: n1\n  automountServiceAccountToken: false\n', '', mirror));
      await ok(['apply', '-f', '-'], pod('other', 'default', '  nodeName: n2\n'));
      stderr = await refused([...AS_NODE, 'delete', 'pod', 'other', '--wait=false']);
      assert.match(stderr, /pods "other" is forbidden: node "n1" can only delete pods with spec\.nodeName set to itself/);
      const evict = await c.request('POST', '/api/v1/namespaces/default/pods/other/eviction', {
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'other', namespace: 'default' } },
        headers: { 'Impersonate-User': 'system:node:n1', 'Impersonate-Group': 'system:nodes' },
      });
      assert.equal(evict.status, 403, evict.text);
      assert.match(evict.json.message, /node n1 can only evict pods with spec\.nodeName set to itself/);
      await ok([...AS_NODE, 'delete', 'pod', 'static', '--wait=false']);
    });

    it('a node may write only its own Lease, in kube-node-lease', async () => {
      const lease = (name: string, ns: string) =>
        `apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: {holderIdentity: ${name}}\n`;
      await ok([...AS_NODE, 'create', '-f', '-'], lease('n1', 'kube-node-lease'));
      let stderr = await refused([...AS_NODE, 'create', '-f', '-'], lease('n2', 'kube-node-lease'));
      assert.match(stderr, /can only access node lease with the same name as the requesting node/);
      stderr = await refused([...AS_NODE, 'create', '-f', '-'], lease('n1', 'default'));
      assert.match(stderr, /can only access leases in the "kube-node-lease" system namespace/);
    });
  });
});

describe('kubectl: AlwaysDeny and NamespaceExists', { skip }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster(['--disable-admission-plugins=NamespaceLifecycle', '--enable-admission-plugins=NamespaceExists,AlwaysDeny']);
  });
  after(async () => {
    await c?.stop();
  });

  it('NamespaceExists refuses objects in a missing namespace; AlwaysDeny refuses every write', async () => {
    let r = await c.kubectl(['create', 'configmap', 'cm', '-n', 'ghost', '--from-literal=a=b']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /namespaces "ghost" not found/);
    r = await c.kubectl(['create', 'configmap', 'cm', '-n', 'default', '--from-literal=a=b']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /configmaps "cm" is forbidden: admission control is denying all modifications/);
    r = await c.kubectl(['get', 'configmaps', '-n', 'default']);
    assert.equal(r.code, 0, r.stderr);
  });
});

describe('kubectl: OwnerReferencesPermissionEnforcement, EventRateLimit and ImagePolicyWebhook (with RBAC)', { skip }, () => {
  let c: TestCluster;
  let dir: string;
  let hook: Server;
  const reviews: any[] = [];
  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const AS_ALICE = ['--as', 'alice'];
  const configMap = (name: string, owner = '') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: own\n${owner}data: {a: b}\n`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-admission-rbac-'));
    // The image policy backend: denies images under evil/, fails (500) for images under flaky/.
    const ca = await makeCA('imagepolicy-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'imagepolicy', ['127.0.0.1']);
    hook = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        reviews.push(review);
        const images: string[] = review.spec.containers.map((x: any) => x.image);
        if (images.some((i) => i.startsWith('flaky/'))) {
          res.statusCode = 500;
          res.end();
          return;
        }
        const evil = images.filter((i) => i.startsWith('evil/'));
        const status = evil.length > 0 ? { allowed: false, reason: `${evil.join(', ')} not allowed` } : { allowed: true, auditAnnotations: { checked: 'yes' } };
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', status }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    writeFileSync(
      join(dir, 'imagepolicy.kubeconfig'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hook', cluster: { server: `https://127.0.0.1:${(hook.address() as AddressInfo).port}/review`, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
        users: [{ name: 'apiserver', user: { token: 'image-secret' } }],
        contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
        'current-context': 'hook',
      }),
    );
    writeFileSync(
      join(dir, 'admission.yaml'),
      `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ImagePolicyWebhook
  configuration:
    imagePolicy: {kubeConfigFile: imagepolicy.kubeconfig, allowTTL: 50, denyTTL: 50, retryBackoff: 10, defaultAllow: true}
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits: [{type: Namespace, qps: 1, burst: 3}]
`,
    );
    c = await startCluster([
      '--authorization-mode=RBAC',
      '--enable-admission-plugins=OwnerReferencesPermissionEnforcement,EventRateLimit,ImagePolicyWebhook',
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
    ]);
    await ok(['create', 'namespace', 'own']);
    await ok(['create', 'namespace', 'noisy']);
    await ok(['create', 'role', 'writer', '-n', 'own', '--verb=get,list,create,update,patch', '--resource=configmaps']);
    await ok(['create', 'rolebinding', 'alice-writer', '-n', 'own', '--role=writer', '--user=alice']);
    await ok(['create', '-f', '-'], configMap('owner'));
  });
  after(async () => {
    await c?.stop();
    hook?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ImagePolicyWebhook sends ImageReviews, refuses denied images and fails open when the backend fails', async () => {
    const podWith = (name: string, image: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: own\n  annotations: {team.image-policy.k8s.io/owner: web, other: x}\nspec:\n  containers: [{name: app, image: ${image}}]\n`;
    await ok(['create', '-f', '-'], podWith('good', 'busybox:1.36'));
    const review = reviews.find((r) => r.spec.containers[0].image === 'busybox:1.36');
    assert.deepEqual(review.spec, { containers: [{ image: 'busybox:1.36' }], annotations: { 'team.image-policy.k8s.io/owner': 'web' }, namespace: 'own' });
    assert.equal(review.apiVersion, 'imagepolicy.k8s.io/v1alpha1');
    const r = await c.kubectl(['create', '-f', '-'], { input: podWith('bad', 'evil/miner:1') });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pods "bad" is forbidden: image policy webhook backend denied one or more images: evil\/miner:1 not allowed/);
    await ok(['create', '-f', '-'], podWith('flaky', 'flaky/app:1'));
    const p = JSON.parse(await ok(['get', 'pod', 'flaky', '-n', 'own', '-o', 'json']));
    assert.equal(p.metadata.annotations['alpha.image-policy.k8s.io/failed-open'], 'true');
  });

  it('setting an ownerRef needs delete on the object, blockOwnerDeletion needs update on the owner finalizers', async () => {
    const owner = JSON.parse(await ok(['get', 'configmap', 'owner', '-n', 'own', '-o', 'json']));
    const ref = (block: boolean) =>
      `  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: ${owner.metadata.uid}${block ? ', blockOwnerDeletion: true' : ''}}]\n`;
    await ok([...AS_ALICE, 'create', '-f', '-'], configMap('plain'));
    let r = await c.kubectl([...AS_ALICE, 'create', '-f', '-'], { input: configMap('owned', ref(false)) });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /configmaps "owned" is forbidden: cannot set an ownerRef on a resource you can't delete: /);
    await ok(['create', 'role', 'deleter', '-n', 'own', '--verb=delete', '--resource=configmaps']);
    await ok(['create', 'rolebinding', 'alice-deleter', '-n', 'own', '--role=deleter', '--user=alice']);
    await ok([...AS_ALICE, 'create', '-f', '-'], configMap('owned', ref(false)));
    r = await c.kubectl([...AS_ALICE, 'create', '-f', '-'], { input: configMap('blocking', ref(true)) });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: /);
    await ok(['create', 'role', 'finalizer', '-n', 'own', '--verb=update', '--resource=configmaps/finalizers']);
    await ok(['create', 'rolebinding', 'alice-finalizer', '-n', 'own', '--role=finalizer', '--user=alice']);
    await ok([...AS_ALICE, 'create', '-f', '-'], configMap('blocking', ref(true)));
  });

  it('EventRateLimit refuses events beyond the namespace bucket with 429', async () => {
    const statuses: number[] = [];
    let refusal: any;
    for (let i = 0; i < 10; i++) {
      const r = await c.request('POST', '/api/v1/namespaces/noisy/events', {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: `e${i}` },
          involvedObject: { kind: 'Pod', name: 'p', namespace: 'noisy' },
          reason: 'Test',
          message: 'm',
          type: 'Normal',
        },
      });
      statuses.push(r.status);
      if (r.status === 429) refusal ??= r.json;
    }
    // The bucket starts with burst (3) tokens and refills at 1 per second: ten quick creates cannot all pass.
    assert.deepEqual(statuses.slice(0, 3), [201, 201, 201]);
    assert.ok(statuses.includes(429), statuses.join(','));
    assert.equal(refusal.reason, 'TooManyRequests');
    assert.equal(refusal.message, 'Too many requests: limit reached on type Namespace for key noisy');
    // Other namespaces have their own bucket.
    const other = await c.request('POST', '/api/v1/namespaces/own/events', {
      body: { apiVersion: 'v1', kind: 'Event', metadata: { name: 'e' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'own' }, reason: 'R', message: 'm' },
    });
    assert.equal(other.status, 201, other.text);
  });
});

describe('kubectl: PodSecurityPolicy (with RBAC)', { skip }, () => {
  let c: TestCluster;
  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const refused = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr;
  };
  const AS_ALICE = ['--as', 'alice'];
  const pspPod = (name: string, spec = '', container = '') =>
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: psp}\nspec:\n${spec}  containers:\n  - name: app\n    image: busybox:1.36\n${container}`;
  const RESTRICTED = `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: restricted
  annotations:
    seccomp.security.alpha.kubernetes.io/defaultProfileName: runtime/default
    seccomp.security.alpha.kubernetes.io/allowedProfileNames: runtime/default,localhost/ok.json
spec:
  privileged: false
  allowPrivilegeEscalation: false
  requiredDropCapabilities: [ALL]
  volumes: [configMap, emptyDir, secret, projected]
  runAsUser: {rule: MustRunAsNonRoot}
  seLinux: {rule: RunAsAny}
  fsGroup: {rule: MustRunAs, ranges: [{min: 1, max: 65535}]}
  supplementalGroups: {rule: RunAsAny}
`;
  const PRIVILEGED = `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: privileged}
spec:
  privileged: true
  allowedCapabilities: ['*']
  volumes: ['*']
  hostNetwork: true
  hostPorts: [{min: 0, max: 65535}]
  runAsUser: {rule: RunAsAny}
  seLinux: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  supplementalGroups: {rule: RunAsAny}
`;

  before(async () => {
    c = await startCluster(['--authorization-mode=RBAC', '--enable-admission-plugins=PodSecurityPolicy', '--allow-privileged=true']);
    await ok(['create', 'namespace', 'psp']);
    await ok(['create', 'serviceaccount', 'builder', '-n', 'psp']);
    await ok(['create', 'role', 'pods', '-n', 'psp', '--verb=create,get', '--resource=pods']);
    await ok(['create', 'rolebinding', 'alice-pods', '-n', 'psp', '--role=pods', '--user=alice']);
    await ok(['create', 'clusterrole', 'psp-restricted', '--verb=use', '--resource=podsecuritypolicies.policy', '--resource-name=restricted']);
    await ok(['create', 'clusterrole', 'psp-privileged', '--verb=use', '--resource=podsecuritypolicies.policy', '--resource-name=privileged']);
    await ok(['create', 'rolebinding', 'alice-restricted', '-n', 'psp', '--clusterrole=psp-restricted', '--user=alice']);
    await ok(['create', 'rolebinding', 'builder-privileged', '-n', 'psp', '--clusterrole=psp-privileged', '--serviceaccount=psp:builder']);
  });
  after(async () => {
    await c?.stop();
  });

  it('refuses pods while no policy may be used', async () => {
    const stderr = await refused(['create', '-f', '-'], pspPod('early'));
    assert.match(stderr, /pods "early" is forbidden: no providers available to validate pod request\n/);
  });

  it('serves the kind with its defaults and table', async () => {
    await ok(['create', '-f', '-'], RESTRICTED);
    await ok(['create', '-f', '-'], PRIVILEGED);
    assert.equal(JSON.parse(await ok(['get', 'psp', 'privileged', '-o', 'json'])).spec.allowPrivilegeEscalation, true);
    const table = await ok(['get', 'podsecuritypolicies']);
    assert.match(table, /^NAME\s+PRIV\s+CAPS\s+SELINUX\s+RUNASUSER\s+FSGROUP\s+SUPGROUP\s+READONLYROOTFS\s+VOLUMES\n/);
    assert.match(table, /\nrestricted\s+false\s+RunAsAny\s+MustRunAsNonRoot\s+MustRunAs\s+RunAsAny\s+false\s+configMap,emptyDir,secret,projected\n/);
    const stderr = await refused(['create', '-f', '-'], RESTRICTED.replace('name: restricted', 'name: bad').replace('{rule: MustRunAsNonRoot}', '{rule: Sometimes}'));
    assert.match(stderr, /spec\.runAsUser\.rule: Unsupported value: "Sometimes"/);
  });

  it('applies the policy the user may use, defaulting the pod, and names it in kubernetes.io/psp', async () => {
    await ok([...AS_ALICE, 'create', '-f', '-'], pspPod('mutated'));
    const p = JSON.parse(await ok(['get', 'pod', 'mutated', '-n', 'psp', '-o', 'json']));
    assert.equal(p.metadata.annotations['kubernetes.io/psp'], 'restricted');
    assert.equal(p.spec.securityContext.fsGroup, 1);
    assert.deepEqual(p.spec.containers[0].securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true });
    let stderr = await refused([...AS_ALICE, 'create', '-f', '-'], pspPod('priv', '', '    securityContext: {privileged: true}\n'));
    // Only the errors of the policy alice may use (restricted), as Go prints a field.ErrorList.
    assert.ok(
      stderr.includes('pods "priv" is forbidden: unable to validate against any pod security policy: [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]\n'),
      stderr,
    );
    assert.equal(p.metadata.annotations['seccomp.security.alpha.kubernetes.io/pod'], 'runtime/default', "the policy's default seccomp profile");
    stderr = await refused([...AS_ALICE, 'create', '-f', '-'], pspPod('unconfined', '  securityContext: {seccompProfile: {type: Unconfined}}\n'));
    assert.match(
      stderr,
      // The container falls back to the pod's profile, so it is refused too.
      /: \[pod\.metadata\.annotations\[seccomp\.security\.alpha\.kubernetes\.io\/pod\]: Forbidden: unconfined is not an allowed seccomp profile\. Valid values are runtime\/default,localhost\/ok\.json pod\.metadata\.annotations\[container\.seccomp\.security\.alpha\.kubernetes\.io\/app\]: Forbidden: unconfined is not an allowed seccomp profile\. Valid values are runtime\/default,localhost\/ok\.json\]/,
    );
    stderr = await refused([...AS_ALICE, 'create', '-f', '-'], pspPod('host', '  volumes: [{name: h, hostPath: {path: /tmp}}]\n'));
    assert.match(stderr, /spec\.volumes\[0\]: Invalid value: "hostPath": hostPath volumes are not allowed to be used/);
    // The common refusals together, in the provider's order: pod level, volumes, then each container's.
    stderr = await refused(
      [...AS_ALICE, 'create', '-f', '-'],
      pspPod(
        'many',
        '  hostNetwork: true\n  volumes: [{name: h, hostPath: {path: /tmp}}]\n',
        '    securityContext: {privileged: true, runAsUser: 0, capabilities: {add: [NET_ADMIN]}}\n',
      ),
    );
    assert.equal(
      stderr.trim(),
      'Error from server (Forbidden): error when creating "STDIN": pods "many" is forbidden: unable to validate against any pod security policy: [' +
        'spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used ' +
        'spec.volumes[0]: Invalid value: "hostPath": hostPath volumes are not allowed to be used ' +
        'spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden ' +
        'spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed ' +
        'spec.containers[0].securityContext.capabilities.add: Invalid value: "NET_ADMIN": capability may not be added]',
    );
    stderr = await refused([...AS_ALICE, 'create', '-f', '-'], pspPod('nonroot', '', '    securityContext: {runAsNonRoot: false}\n'));
    assert.ok(stderr.includes(': [spec.containers[0].securityContext.runAsNonRoot: Invalid value: false: must be true]'), stderr);
  });

  it('validates updates without defaults, against the pod’s kubernetes.io/psp policy first', async () => {
    // The admin may use both policies; an update is checked against the pod's own policy first (kubernetes.io/psp).
    await ok([...AS_ALICE, 'create', '-f', '-'], pspPod('kept'));
    await ok(['annotate', 'pod', 'kept', '-n', 'psp', 'note=fine']);
    const kept = JSON.parse(await ok(['get', 'pod', 'kept', '-n', 'psp', '-o', 'json']));
    assert.equal(kept.metadata.annotations['kubernetes.io/psp'], 'restricted');
  });

  it("uses a policy the pod's service account may use, and prefers a policy that needs no change", async () => {
    await ok([...AS_ALICE, 'create', '-f', '-'], pspPod('built', '  serviceAccountName: builder\n', '    securityContext: {privileged: true}\n'));
    const built = JSON.parse(await ok(['get', 'pod', 'built', '-n', 'psp', '-o', 'json']));
    assert.equal(built.metadata.annotations['kubernetes.io/psp'], 'privileged');
    // The admin may use both: the privileged policy admits a plain pod unchanged, so it wins over restricted.
    await ok(['create', '-f', '-'], pspPod('admins'));
    const admins = JSON.parse(await ok(['get', 'pod', 'admins', '-n', 'psp', '-o', 'json']));
    assert.equal(admins.metadata.annotations['kubernetes.io/psp'], 'privileged');
    assert.equal(admins.spec.containers[0].securityContext, undefined);
  });
});
