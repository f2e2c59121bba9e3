// Units of the CSR machinery: the PKCS#10 reader (keys, names, signatures), the signer's certificate and its
// kubelet request rules, the CONDITION column, and the agent's rotation deadline, digested CSR name and the
// subresource its webhook authorizer asks about.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, webcrypto } from 'node:crypto';
import { parseCSR } from '../../src/registry/kinds/certificates/csr.js';
import { csrCondition } from '../../src/registry/kinds/certificates/index.js';
import { kubeletClientProblem, kubeletServingProblem, signRequest } from '../../src/server/controllers/csr-signing.js';
import { makeCA } from '../../src/server/certs.js';
import { csrCleanupReason } from '../../src/server/controllers/csr-cleaner.js';
import { makeKeyAndCSR } from '../../src/agent/certificate-request.js';
import { CertificateManager, CertificateStore, digestedName, rotationDeadline } from '../../src/agent/certificate-manager.js';
import type { ApiClient } from '../../src/agent/client/client.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeSubresource } from '../../src/agent/server/auth.js';

/** An RSA request made with @peculiar/x509 (kubeadm and Go clients often send RSA). */
async function rsaCSR(): Promise<string> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']));
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ CN: ['rsa-user'] }],
    keys,
    signingAlgorithm: alg,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'a.example' }, { type: 'ip', value: '2001:db8::1' }])],
  });
  return csr.toString('pem');
}

void describe('CSR reader and signer', () => {
  void it('reads subject, names and key of EC and RSA requests, and refuses a broken signature or another PEM type', async () => {
    const { csrPem } = await makeKeyAndCSR({ commonName: 'system:node:n1', organizations: ['system:nodes'], hosts: ['n1', '10.1.2.3'] });
    const ec = parseCSR(csrPem);
    assert.equal(ec.commonName, 'system:node:n1');
    assert.deepEqual(ec.organizations, ['system:nodes']);
    assert.deepEqual(ec.dnsNames, ['n1']);
    assert.deepEqual(ec.ipAddresses, ['10.1.2.3']);
    assert.equal(ec.publicKey.asymmetricKeyType, 'ec');
    const rsa = parseCSR(await rsaCSR());
    assert.equal(rsa.publicKey.asymmetricKeyType, 'rsa');
    assert.deepEqual([rsa.dnsNames, rsa.ipAddresses], [['a.example'], ['2001:db8::1']]);

    const der = Buffer.from(csrPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
    der[der.length - 3]! ^= 0x01;
    const broken = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    assert.throws(() => parseCSR(broken), /x509: ECDSA verification failure/);
    assert.throws(() => parseCSR(csrPem.replace(/CERTIFICATE REQUEST/g, 'CERTIFICATE')), /PEM block type must be CERTIFICATE REQUEST/);
  });

  void it('issues the subject, names and usages asked for, within the signing duration and never past the CA', async () => {
    const ca = await makeCA('unit-ca');
    const cr = parseCSR(await rsaCSR());
    const now = Date.now();
    const pem = await signRequest(ca, cr, ['digital signature', 'key encipherment', 'server auth'], 600 * 2, now);
    const cert = new X509Certificate(pem);
    assert.equal(cert.subject, 'CN=rsa-user');
    assert.equal(cert.subjectAltName, 'DNS:a.example, IP Address:2001:DB8:0:0:0:0:0:1');
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
    assert.ok(cert.verify(new X509Certificate(ca.cert).publicKey));
    assert.equal(Date.parse(cert.validTo) - Math.floor(now / 1000) * 1000, 1200_000);
    assert.equal(Math.floor(now / 1000) * 1000 - Date.parse(cert.validFrom), 300_000);
    // Under 10 minutes asked: 10 minutes; over the signer's duration: its duration, backdated at both ends (>= 8 h).
    const short = new X509Certificate(await signRequest(ca, cr, ['client auth'], 1, now));
    assert.equal(Date.parse(short.validTo) - Math.floor(now / 1000) * 1000, 600_000);
    const long = new X509Certificate(await signRequest({ ...ca, durationSeconds: 9 * 3600 }, cr, ['client auth'], 99 * 3600, now));
    assert.equal(Date.parse(long.validTo) - Date.parse(long.validFrom), 9 * 3600_000);
    // makeCA's CA lives a year: a two-year duration stops at its end.
    const capped = new X509Certificate(await signRequest({ ...ca, durationSeconds: 2 * 365 * 86400 }, cr, ['client auth'], undefined, now));
    assert.equal(capped.validTo, new X509Certificate(ca.cert).validTo);
  });

  void it('applies the kubelet client and serving request rules with kubelet\'s messages', async () => {
    const node = parseCSR((await makeKeyAndCSR({ commonName: 'system:node:n1', organizations: ['system:nodes'] })).csrPem);
    const usages = ['digital signature', 'key encipherment', 'client auth'];
    assert.equal(kubeletClientProblem(node, usages), '');
    assert.equal(kubeletClientProblem(node, ['digital signature', 'client auth']), '');
    assert.equal(kubeletClientProblem(node, ['client auth']), 'usages did not match [client auth digital signature key encipherment]');
    const withSAN = parseCSR((await makeKeyAndCSR({ commonName: 'system:node:n1', organizations: ['system:nodes'], hosts: ['n1'] })).csrPem);
    assert.equal(kubeletClientProblem(withSAN, usages), 'DNS subjectAltNames are not allowed');
    const other = parseCSR((await makeKeyAndCSR({ commonName: 'n1', organizations: ['system:nodes', 'x'] })).csrPem);
    assert.equal(kubeletClientProblem(other, usages), 'subject organization is not system:nodes');
    assert.equal(kubeletServingProblem(node, ['digital signature', 'key encipherment', 'server auth']), 'DNS or IP subjectAltName is required');
    assert.equal(kubeletServingProblem(withSAN, ['digital signature', 'key encipherment', 'server auth']), '');
  });

  void it('the cleaner keeps requests for as long as Kubernetes does', async () => {
    const now = Date.parse('2030-01-01T12:00:00Z');
    const at = (ms: number) => new Date(now - ms).toISOString();
    const cond = (type: string, ago: number) => ({ type, status: 'True', lastUpdateTime: at(ago) });
    assert.equal(csrCleanupReason({ metadata: { creationTimestamp: at(23 * 3600_000) } }, now), '');
    assert.equal(csrCleanupReason({ metadata: { creationTimestamp: at(25 * 3600_000) } }, now), 'it has been pending for more than 24 hours');
    assert.equal(csrCleanupReason({ status: { conditions: [cond('Denied', 59 * 60_000)] } }, now), '');
    assert.equal(csrCleanupReason({ status: { conditions: [cond('Denied', 61 * 60_000)] } }, now), 'it was denied more than an hour ago');
    assert.equal(csrCleanupReason({ status: { conditions: [cond('Approved', 2 * 3600_000), cond('Failed', 61 * 60_000)] } }, now), 'it failed more than an hour ago');
    assert.equal(csrCleanupReason({ status: { conditions: [cond('Approved', 2 * 3600_000)] } }, now), '', 'approved, waiting for the signer');
    const ca = await makeCA('cleaner-ca');
    const issued = { status: { conditions: [cond('Approved', 10 * 60_000)], certificate: Buffer.from(ca.cert).toString('base64') } };
    assert.equal(csrCleanupReason(issued, Date.now()), '');
    assert.equal(csrCleanupReason(issued, Date.now() + 2 * 365 * 86400_000), 'its certificate has expired');
  });

  void it('prints the CONDITION column as kubectl shows it', () => {
    const csr = (types: string[], certificate?: string) => ({ status: { conditions: types.map((type) => ({ type, status: 'True' })), ...(certificate ? { certificate } : {}) } });
    assert.equal(csrCondition({}), 'Pending');
    assert.equal(csrCondition(csr(['Approved'], 'Y2VydA==')), 'Approved,Issued');
    assert.equal(csrCondition(csr(['Approved', 'Failed'])), 'Approved,Failed');
    assert.equal(csrCondition(csr(['Denied'])), 'Denied');
  });
});

void describe('agent certificate helpers', () => {
  void it('renews at 70-84% of the lifetime', () => {
    const cert = { validFrom: 'Jan  1 00:00:00 2030 GMT', validTo: 'Jan  1 00:01:40 2030 GMT' } as X509Certificate;
    const from = Date.parse(cert.validFrom);
    assert.equal(rotationDeadline(cert, 0) - from, 70_000);
    assert.equal(rotationDeadline(cert, 1) - from, 84_000);
  });

  void it('renews an expired certificate at once and, when that keeps failing, calls onExpired', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'certmgr-'));
    try {
      const ca = await makeCA('mgr-ca');
      const { keyPem, csrPem } = await makeKeyAndCSR({ commonName: 'system:node:n1', organizations: ['system:nodes'] });
      const cert = await signRequest(ca, parseCSR(csrPem), ['client auth'], 600, Date.now() - 3600_000);
      const store = new CertificateStore(dir, 'orchlet-client');
      await store.update({ cert, key: keyPem });
      let asked = 0;
      const client = { create: () => (asked++, Promise.reject(new Error('connection refused'))) } as unknown as ApiClient;
      const expired = new Promise<void>((resolve) => {
        const m = new CertificateManager({
          name: 'client certificate',
          store,
          client: () => client,
          subject: () => ({ commonName: 'system:node:n1', organizations: ['system:nodes'] }),
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['client auth'],
          onRotate: () => assert.fail('nothing was issued'),
          onExpired: { afterMs: 60_000, call: () => (m.stop(), resolve()) },
          log: () => {},
        });
        void m.start();
      });
      // The manager's timers do not keep the process alive (the agent does): this one does, meanwhile.
      const keepAlive = setTimeout(() => {}, 30_000);
      await expired;
      clearTimeout(keepAlive);
      assert.equal(asked, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('names bootstrap requests after key, subject and usages (node-csr-...)', () => {
    const a = digestedName(Buffer.from('key-a'), { commonName: 'system:node:n1', organizations: ['system:nodes'] }, ['client auth']);
    assert.match(a, /^node-csr-[A-Za-z0-9_-]{86}$/);
    assert.equal(a, digestedName(Buffer.from('key-a'), { commonName: 'system:node:n1', organizations: ['system:nodes'] }, ['client auth']));
    assert.notEqual(a, digestedName(Buffer.from('key-b'), { commonName: 'system:node:n1', organizations: ['system:nodes'] }, ['client auth']));
  });

  void it('maps request paths to the nodes subresource kubelet authorizes', () => {
    assert.equal(nodeSubresource('/stats/summary'), 'stats');
    assert.equal(nodeSubresource('/stats'), 'stats');
    assert.equal(nodeSubresource('/metrics/cadvisor'), 'metrics');
    assert.equal(nodeSubresource('/logs/'), 'log');
    assert.equal(nodeSubresource('/spec/'), 'spec');
    assert.equal(nodeSubresource('/containerLogs/ns/pod/c'), 'proxy');
    assert.equal(nodeSubresource('/statsx'), 'proxy');
  });
});
