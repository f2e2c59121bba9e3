// End to end: the CertificateSigningRequest API through kubectl — validation, the table, `kubectl
// certificate approve/deny`, the CertificateApproval/CertificateSigning/CertificateSubjectRestriction
// admission plugins, the csrsigning controller with the cluster CA beside --client-ca-file, and the
// csrapproving controller's auto-approval of kubelet client requests.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { makeCA, type CertAndKey } from '../../src/server/certs.js';
import { makeKeyAndCSR, type CSRSubject } from '../../src/agent/certificate-request.js';

type Json = Record<string, any>;

async function csrObject(name: string, subject: CSRSubject, signerName: string, usages: string[], extra: Json = {}): Promise<{ obj: Json; keyPem: string }> {
  const { keyPem, csrPem } = await makeKeyAndCSR(subject);
  return {
    keyPem,
    obj: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: { request: Buffer.from(csrPem).toString('base64'), signerName, usages, ...extra },
    },
  };
}

void describe('CertificateSigningRequest API (kubectl)', () => {
  let c: TestCluster;
  let caDir: string;
  let ca: CertAndKey;
  const apply = (obj: Json, as?: string[]) => c.kubectl([...(as ?? []), 'create', '-f', '-'], { input: JSON.stringify(obj) });
  const getCSR = async (name: string): Promise<Json> => {
    const r = await c.kubectl(['get', 'csr', name, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Json;
  };
  const issued = (name: string) =>
    eventually(`csr ${name} issued`, async () => {
      const o = await getCSR(name);
      return typeof o['status']?.certificate === 'string' && o['status'].certificate !== '' ? o : undefined;
    });

  before(async () => {
    caDir = await mkdtemp(join(tmpdir(), 'orch-csr-ca-'));
    ca = await makeCA('orch-test-cluster-ca');
    await writeFile(join(caDir, 'ca.crt'), ca.cert);
    await writeFile(join(caDir, 'ca.key'), ca.key, { mode: 0o600 });
    c = await startCluster([`--client-ca-file=${join(caDir, 'ca.crt')}`, '--authorization-mode=Node,RBAC']);
  });
  after(async () => {
    await c?.stop();
    await rm(caDir, { recursive: true, force: true });
  });

  void it('serves csr in discovery with the approval and status subresources', async () => {
    const r = await c.kubectl(['api-resources', '--api-group=certificates.k8s.io', '-o', 'wide']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /certificatesigningrequests\s+csr\s+certificates\.k8s\.io\/v1\s+false\s+CertificateSigningRequest/);
    const d = await c.request('GET', '/apis/certificates.k8s.io/v1');
    const names = (d.json.resources as Json[]).map((x) => `${x['name']}:${(x['verbs'] as string[]).join(',')}`);
    assert.deepEqual(names, [
      'certificatesigningrequests:create,delete,deletecollection,get,list,patch,update,watch',
      'certificatesigningrequests/approval:get,patch,update',
      'certificatesigningrequests/status:get,patch,update',
    ]);
  });

  void it('validates requests as Kubernetes does', async () => {
    const bad = (await csrObject('bad-pem', { commonName: 'x' }, 'kubernetes.io/kube-apiserver-client', ['client auth'])).obj;
    bad['spec'].request = Buffer.from('not a pem').toString('base64');
    let r = await apply(bad);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec\.request: Invalid value: \[\]byte\{0x6e, 0x6f, .*\}: PEM block type must be CERTIFICATE REQUEST/);

    const { obj } = await csrObject('short', { commonName: 'x' }, 'kubernetes.io/kube-apiserver-client', [], { expirationSeconds: 599 });
    r = await apply(obj);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec\.usages: Required value: usages must be provided/);
    assert.match(r.stderr, /spec\.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds \(10 minutes\)/);

    const noSigner = (await csrObject('nosigner', { commonName: 'x' }, '', ['client auth', 'client auth', 'bogus'])).obj;
    r = await apply(noSigner);
    assert.match(r.stderr, /spec\.signerName: Required value: signerName must be provided/);
    assert.match(r.stderr, /spec\.usages\[1\]: Duplicate value: "client auth"/);
    assert.match(r.stderr, /spec\.usages\[2\]: Unsupported value: "bogus"/);

    const oneSegment = (await csrObject('onesegment', { commonName: 'x' }, 'example/signer', ['client auth'])).obj;
    r = await apply(oneSegment);
    assert.match(r.stderr, /spec\.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots/);
  });

  void it('records the requester, lists as kubectl shows it, and issues after `kubectl certificate approve`', async () => {
    const { obj, keyPem } = await csrObject('alice', { commonName: 'alice', organizations: ['dev'] }, 'kubernetes.io/kube-apiserver-client', ['client auth'], {
      expirationSeconds: 3600,
      username: 'spoofed',
    });
    let r = await apply(obj);
    assert.equal(r.code, 0, r.stderr);
    const stored = await getCSR('alice');
    assert.equal(stored['spec'].username, 'admin');
    assert.deepEqual(stored['spec'].groups, ['system:masters', 'system:authenticated']);
    r = await c.kubectl(['get', 'csr', 'alice']);
    assert.equal(r.code, 0, r.stderr);
    const [header, row] = r.stdout.trim().split('\n');
    assert.match(header!, /^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION$/);
    assert.match(row!, /^alice\s+\S+\s+kubernetes\.io\/kube-apiserver-client\s+admin\s+60m\s+Pending$/);

    // The main resource changes neither spec nor status.
    r = await c.kubectl(['patch', 'csr', 'alice', '--type=merge', '-p', '{"status":{"conditions":[{"type":"Approved","status":"True"}]}}']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await getCSR('alice'))['status']?.conditions, undefined);

    r = await c.kubectl(['certificate', 'approve', 'alice']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /certificatesigningrequest\.certificates\.k8s\.io\/alice approved/);
    const done = await issued('alice');
    const cond = (done['status'].conditions as Json[])[0]!;
    assert.equal(cond['type'], 'Approved');
    assert.equal(cond['reason'], 'KubectlApprove');
    assert.ok(cond['lastUpdateTime'] && cond['lastTransitionTime']);
    r = await c.kubectl(['get', 'csr', 'alice', '--no-headers']);
    assert.match(r.stdout, /Approved,Issued\s*$/);
    r = await c.kubectl(['describe', 'csr', 'alice']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Requesting User:\s+admin/);
    assert.match(r.stdout, /Signer:\s+kubernetes\.io\/kube-apiserver-client/);
    assert.match(r.stdout, /Status:\s+Approved,Issued/);
    assert.match(r.stdout, /Common Name:\s+alice/);

    const pem = Buffer.from(done['status'].certificate as string, 'base64').toString('utf8');
    const cert = new X509Certificate(pem);
    assert.ok(cert.verify(new X509Certificate(ca.cert).publicKey), 'signed by the cluster CA');
    assert.equal(cert.subject, 'O=dev\nCN=alice');
    assert.equal(cert.ca, false);
    const lifetime = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    // 1 h asked; under 8 h the end is not backdated while the start is, by 5 minutes.
    assert.ok(Math.abs(lifetime - 65 * 60_000) < 2000, `lifetime ${lifetime} ms`);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2']);

    // The issued certificate authenticates as alice (who may do nothing yet).
    const cfg = join(c.dir, 'alice.kubeconfig');
    await writeFile(
      cfg,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'e2e', cluster: { server: c.url, 'certificate-authority-data': Buffer.from(c.cp.server.caCert).toString('base64') } }],
        users: [{ name: 'alice', user: { 'client-certificate-data': Buffer.from(pem).toString('base64'), 'client-key-data': Buffer.from(keyPem).toString('base64') } }],
        contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'alice' } }],
        'current-context': 'e2e',
      }),
    );
    r = await c.kubectl(['--kubeconfig', cfg, 'get', 'namespaces']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /User "alice" cannot list resource "namespaces"/);

    // Status may not change the issued certificate; approval conditions only through approval.
    const upd = await c.request('PUT', '/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/status', {
      body: { ...done, status: { ...done['status'], certificate: Buffer.from(ca.cert).toString('base64') } },
    });
    assert.equal(upd.status, 422, upd.text);
    assert.match(upd.json.message, /status\.certificate: Forbidden: updates may not modify existing certificate content/);
  });

  void it('`kubectl certificate deny` denies, and nothing is issued', async () => {
    const { obj } = await csrObject('denied', { commonName: 'eve' }, 'kubernetes.io/kube-apiserver-client', ['client auth']);
    assert.equal((await apply(obj)).code, 0);
    const r = await c.kubectl(['certificate', 'deny', 'denied']);
    assert.equal(r.code, 0, r.stderr);
    const o = await getCSR('denied');
    assert.equal((o['status'].conditions as Json[])[0]!['type'], 'Denied');
    const both = await c.request('PUT', '/apis/certificates.k8s.io/v1/certificatesigningrequests/denied/approval', {
      body: { ...o, status: { conditions: [...(o['status'].conditions as Json[]), { type: 'Approved', status: 'True' }] } },
    });
    assert.equal(both.status, 422, both.text);
    assert.match(both.json.message, /status\.conditions\[1\]\.type: Invalid value: "Approved": Approved and Denied conditions are mutually exclusive/);
    assert.equal((await getCSR('denied'))['status'].certificate, undefined);
  });

  void it('CertificateSubjectRestriction refuses system:masters for the kube-apiserver-client signer', async () => {
    const { obj } = await csrObject('masters', { commonName: 'root', organizations: ['system:masters'] }, 'kubernetes.io/kube-apiserver-client', ['client auth']);
    const r = await apply(obj);
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /certificatesigningrequests\.certificates\.k8s\.io "masters" is forbidden: use of kubernetes\.io\/kube-apiserver-client signer with system:masters group is not allowed/,
    );
  });

  void it('CertificateApproval and CertificateSigning need approve and sign on the signer', async () => {
    // bob may create and update CSRs and their subresources, but holds no signer verbs.
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'csr-editor' },
      rules: [{ apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests', 'certificatesigningrequests/approval', 'certificatesigningrequests/status'], verbs: ['*'] }],
    };
    assert.equal((await apply(role)).code, 0);
    assert.equal((await c.kubectl(['create', 'clusterrolebinding', 'bob-csr', '--clusterrole=csr-editor', '--user=bob'])).code, 0);
    const { obj } = await csrObject('bobs', { commonName: 'bob' }, 'kubernetes.io/kube-apiserver-client', ['client auth']);
    let r = await apply(obj, ['--as=bob']);
    assert.equal(r.code, 0, r.stderr);
    r = await c.kubectl(['--as=bob', 'certificate', 'approve', 'bobs']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /"bobs" is forbidden: user not permitted to approve requests with signerName "kubernetes\.io\/kube-apiserver-client"/);
    const o = await getCSR('bobs');
    const put = await c.request('PUT', '/apis/certificates.k8s.io/v1/certificatesigningrequests/bobs/status', {
      headers: { 'Impersonate-User': 'bob' },
      body: { ...o, status: { certificate: Buffer.from(ca.cert).toString('base64') } },
    });
    assert.equal(put.status, 403, put.text);
    assert.match(put.json.message, /user not permitted to sign requests with signerName "kubernetes\.io\/kube-apiserver-client"/);
    // With approve on '<domain>/*' he may.
    const approver = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'k8s-io-approver' },
      rules: [{ apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: ['kubernetes.io/*'], verbs: ['approve'] }],
    };
    assert.equal((await apply(approver)).code, 0);
    assert.equal((await c.kubectl(['create', 'clusterrolebinding', 'bob-approve', '--clusterrole=k8s-io-approver', '--user=bob'])).code, 0);
    r = await c.kubectl(['--as=bob', 'certificate', 'approve', 'bobs']);
    assert.equal(r.code, 0, r.stderr);
    await issued('bobs');
  });

  void it('auto-approves a node client request by selfnodeclient permission; the signer fails a malformed kubelet request', async () => {
    assert.equal(
      (
        await c.kubectl([
          'create',
          'clusterrolebinding',
          'auto-rotate',
          '--clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
          '--group=system:nodes',
        ])
      ).code,
      0,
    );
    // The Node authorizer lets a node create CSRs.
    const { obj } = await csrObject('node-n1', { commonName: 'system:node:n1', organizations: ['system:nodes'] }, 'kubernetes.io/kube-apiserver-client-kubelet', [
      'digital signature',
      'key encipherment',
      'client auth',
    ]);
    let r = await apply(obj, ['--as=system:node:n1', '--as-group=system:nodes']);
    assert.equal(r.code, 0, r.stderr);
    const done = await issued('node-n1');
    const cond = (done['status'].conditions as Json[])[0]!;
    assert.deepEqual([cond['type'], cond['reason'], cond['message']], ['Approved', 'AutoApproved', 'Auto approving self kubelet client certificate after SubjectAccessReview.']);
    assert.equal(new X509Certificate(Buffer.from(done['status'].certificate as string, 'base64')).subject, 'O=system:nodes\nCN=system:node:n1');

    // Another node's name: not self, and no nodeclient permission: stays pending.
    const other = (await csrObject('node-n2-by-n1', { commonName: 'system:node:n2', organizations: ['system:nodes'] }, 'kubernetes.io/kube-apiserver-client-kubelet', [
      'digital signature',
      'key encipherment',
      'client auth',
    ])).obj;
    r = await apply(other, ['--as=system:node:n1', '--as-group=system:nodes']);
    assert.equal(r.code, 0, r.stderr);

    const wrong = (await csrObject('bad-kubelet', { commonName: 'kubelet-x', organizations: ['system:nodes'] }, 'kubernetes.io/kube-apiserver-client-kubelet', ['client auth'])).obj;
    assert.equal((await apply(wrong)).code, 0);
    assert.equal((await c.kubectl(['certificate', 'approve', 'bad-kubelet'])).code, 0);
    const failed = await eventually('bad-kubelet failed', async () => {
      const o = await getCSR('bad-kubelet');
      return (o['status']?.conditions as Json[] | undefined)?.find((x) => x['type'] === 'Failed');
    });
    assert.equal(failed['reason'], 'SignerValidationFailure');
    assert.equal(failed['message'], 'subject common name does not begin with system:node:');
    const n2 = await getCSR('node-n2-by-n1');
    assert.equal(n2['status']?.conditions, undefined, 'not approved without nodeclient permission');
  });
});

void describe('CertificateSigningRequest signing without the cluster CA key (kubectl)', () => {
  let c: TestCluster;
  let caDir: string;

  before(async () => {
    // The client CA certificate alone: no ca.key beside it, so nothing can be signed.
    caDir = await mkdtemp(join(tmpdir(), 'orch-csr-nokey-'));
    await writeFile(join(caDir, 'ca.crt'), (await makeCA('orch-test-cluster-ca')).cert);
    c = await startCluster([`--client-ca-file=${join(caDir, 'ca.crt')}`]);
  });
  after(async () => {
    await c?.stop();
    await rm(caDir, { recursive: true, force: true });
  });

  void it('leaves an approved request unsigned with a Warning event naming the missing key', async () => {
    const { obj } = await csrObject('unsignable', { commonName: 'carol' }, 'kubernetes.io/kube-apiserver-client', ['client auth']);
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) })).code, 0);
    assert.equal((await c.kubectl(['certificate', 'approve', 'unsignable'])).code, 0);
    const keyFile = join(caDir, 'ca.key');
    const described = await eventually('the SigningUnavailable event', async () => {
      const r = await c.kubectl(['describe', 'csr', 'unsignable']);
      return r.stdout.includes('SigningUnavailable') ? r.stdout : undefined;
    });
    assert.match(described, /Warning\s+SigningUnavailable\s+\S+\s+csrsigning-controller\s+Not signed: no private key /);
    const events = JSON.parse((await c.kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.name=unsignable', '-o', 'json'])).stdout) as Json;
    assert.equal(events['items'].length, 1);
    assert.equal(
      events['items'][0].message,
      `Not signed: no private key ${keyFile} for --client-ca-file ${join(caDir, 'ca.crt')}: the cluster CA is the --client-ca-file certificate with its private key beside it (ca.crt and ca.key)`,
    );
    const csr = JSON.parse((await c.kubectl(['get', 'csr', 'unsignable', '-o', 'json'])).stdout) as Json;
    assert.equal(csr['status'].certificate, undefined);
    assert.deepEqual((csr['status'].conditions as Json[]).map((x) => x['type']), ['Approved']);
  });
});
