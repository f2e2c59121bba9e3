import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type ConnectionOptions, type SecureVersion } from 'node:tls';
import { createApiServer, type ApiServer, type ServerConfig } from '../../src/server/server.js';
import { makeCA, makeServingCert, type CertAndKey } from '../../src/server/certs.js';
import { certificateNames, parseSniCertKey, tlsCiphers, tlsMinVersion } from '../../src/server/tls.js';
import { parseServerOptions } from '../../src/server/options.js';

function config(dir: string, logs: string[], extra: Partial<ServerConfig> = {}): ServerConfig {
  return {
    bindAddress: '127.0.0.1',
    securePort: 0,
    certDir: join(dir, 'certs'),
    anonymousAuth: false,
    authorizationModes: ['AlwaysAllow'],
    versionInfo: () => ({}),
    logger: (m) => logs.push(m),
    ...extra,
  };
}

interface Handshake {
  protocol: string | null;
  cipher: string;
  /** CN of the certificate the server presented. */
  cn: string;
}

/** Completes a TLS handshake (verification off: the test inspects what the server chose) and hangs up. */
function handshake(server: ApiServer, opts: ConnectionOptions = {}): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: server.port, rejectUnauthorized: false, ...opts }, () => {
      const cert = socket.getPeerX509Certificate();
      const cn = /CN=([^\n]*)/.exec(cert?.subject ?? '')?.[1] ?? '';
      resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name, cn });
      socket.end();
    });
    socket.on('error', reject);
  });
}

void describe('TLS options', () => {
  let dir: string;
  const servers: ApiServer[] = [];

  async function serve(extra: Partial<ServerConfig>, logs: string[] = []): Promise<ApiServer> {
    const s = await createApiServer(config(dir, logs, extra));
    servers.push(s);
    await s.start();
    return s;
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-tls-'));
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await rm(dir, { recursive: true, force: true });
  });

  void it('maps --tls-min-version to Node versions, defaulting to TLS 1.2', () => {
    assert.equal(tlsMinVersion(undefined), 'TLSv1.2');
    assert.equal(tlsMinVersion('VersionTLS10'), 'TLSv1');
    assert.equal(tlsMinVersion('VersionTLS11'), 'TLSv1.1');
    assert.equal(tlsMinVersion('VersionTLS13'), 'TLSv1.3');
    assert.throws(() => tlsMinVersion('VersionTLS14'), /--tls-min-version: unknown tls version "VersionTLS14"/);
  });

  void it('refuses clients below --tls-min-version', async () => {
    const s = await serve({ tlsMinVersion: 'VersionTLS13' });
    assert.equal((await handshake(s)).protocol, 'TLSv1.3');
    await assert.rejects(handshake(s, { maxVersion: 'TLSv1.2' as SecureVersion }));
    const byDefault = await serve({});
    assert.equal((await handshake(byDefault, { maxVersion: 'TLSv1.2' })).protocol, 'TLSv1.2');
    await assert.rejects(handshake(byDefault, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1' }));
  });

  void it('offers only the --tls-cipher-suites for TLS 1.2 and keeps every TLS 1.3 suite unless some are named', async () => {
    const s = await serve({ tlsCipherSuites: ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'] });
    const h = await handshake(s, { maxVersion: 'TLSv1.2' });
    assert.equal(h.cipher, 'ECDHE-ECDSA-AES256-GCM-SHA384');
    await assert.rejects(handshake(s, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }));
    assert.equal((await handshake(s)).protocol, 'TLSv1.3');

    const with13 = await serve({ tlsCipherSuites: ['TLS_CHACHA20_POLY1305_SHA256', 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256'] });
    assert.equal((await handshake(with13)).cipher, 'TLS_CHACHA20_POLY1305_SHA256');
    assert.equal((await handshake(with13, { maxVersion: 'TLSv1.2' })).cipher, 'ECDHE-ECDSA-AES128-GCM-SHA256');
  });

  void it('accepts insecure suites with the Kubernetes warning, drops ones this OpenSSL lacks, refuses unknown ones', async () => {
    const logs: string[] = [];
    const s = await serve({ tlsCipherSuites: ['TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256', 'TLS_RSA_WITH_RC4_128_SHA'] }, logs);
    assert.ok(logs.includes("Use of insecure cipher 'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256' detected."), logs.join('\n'));
    assert.ok(logs.includes("Use of insecure cipher 'TLS_RSA_WITH_RC4_128_SHA' detected."));
    assert.ok(logs.some((l) => l.startsWith('--tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA is not available')));
    assert.equal((await handshake(s, { maxVersion: 'TLSv1.2' })).cipher, 'ECDHE-ECDSA-AES128-SHA256');

    assert.throws(() => tlsCiphers(['TLS_RSA_WITH_RC4_128_SHA'], () => {}), /--tls-cipher-suites: none of the given cipher suites/);
    assert.throws(() => tlsCiphers(['TLS_NOPE'], () => {}), /--tls-cipher-suites: Cipher suite TLS_NOPE not supported.*allowed: TLS_AES_128_GCM_SHA256/);
    assert.throws(
      () => parseServerOptions(['--tls-cipher-suites=TLS_NOPE']),
      (e: Error) => e.message.includes('--tls-cipher-suites') && e.message.includes('TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'),
    );
    const o = parseServerOptions(['--tls-min-version=VersionTLS13', '--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA']);
    assert.equal(o.tlsMinVersion, 'VersionTLS13');
    assert.deepEqual(o.tlsCipherSuites, ['TLS_AES_128_GCM_SHA256', 'TLS_RSA_WITH_AES_128_CBC_SHA']);
  });

  void describe('--tls-sni-cert-key', () => {
    let ca: CertAndKey;
    let sni: ApiServer;

    async function pair(name: string, cn: string, hosts: string[]): Promise<string> {
      const c = await makeServingCert(ca.cert, ca.key, cn, hosts);
      await writeFile(join(dir, `${name}.crt`), c.cert);
      await writeFile(join(dir, `${name}.key`), c.key);
      return `${join(dir, `${name}.crt`)},${join(dir, `${name}.key`)}`;
    }

    before(async () => {
      ca = await makeCA('sni-ca');
      const exact = await pair('exact', 'a.example.com', ['a.example.com', 'alias.test']);
      const wildcard = await pair('wildcard', '*.example.com', ['*.example.com']);
      // Explicit names beat names taken from certificates, and its own SANs are then not used.
      const explicit = await pair('explicit', 'explicit-cert', ['ignored.example.org']);
      const ip = await pair('ip', 'ip-cert', ['10.1.2.3']);
      sni = await serve({
        tlsSniCertKeys: [exact, wildcard, `${explicit}:alias.test,*.wild.test`, `${ip}:127.0.0.1`],
      });
    });

    void it('serves the certificate whose CN or SAN names the server name', async () => {
      assert.equal((await handshake(sni, { servername: 'a.example.com' })).cn, 'a.example.com');
      assert.equal((await handshake(sni, { servername: 'A.Example.COM' })).cn, 'a.example.com');
    });

    void it('prefers exact names to wildcards, and wildcards match one label only', async () => {
      assert.equal((await handshake(sni, { servername: 'b.example.com' })).cn, '*.example.com');
      assert.equal((await handshake(sni, { servername: 'x.wild.test' })).cn, 'explicit-cert');
      const deeper = await handshake(sni, { servername: 'x.y.example.com' });
      assert.notEqual(deeper.cn, '*.example.com');
    });

    void it('lets explicit names beat names extracted from certificates, and ignores the SANs of explicit pairs', async () => {
      assert.equal((await handshake(sni, { servername: 'alias.test' })).cn, 'explicit-cert');
      assert.notEqual((await handshake(sni, { servername: 'ignored.example.org' })).cn, 'explicit-cert');
    });

    void it('accepts IP addresses as explicit names', async () => {
      assert.equal((await handshake(sni, { servername: '127.0.0.1' })).cn, 'ip-cert');
    });

    void it('falls back to the default serving certificate', async () => {
      const other = await handshake(sni, { servername: 'unknown.test' });
      assert.match(other.cn, /@\d+$/);
      const none = await handshake(sni);
      assert.equal(none.cn, other.cn);
    });

    void it('fails at startup naming the option on a missing or mismatched pair', async () => {
      await assert.rejects(
        createApiServer(config(dir, [], { tlsSniCertKeys: [`${join(dir, 'nope.crt')},${join(dir, 'nope.key')}`] })),
        /--tls-sni-cert-key: invalid SNI cert keypair \[0\//,
      );
      const mismatched = `${join(dir, 'exact.crt')},${join(dir, 'wildcard.key')}`;
      await assert.rejects(createApiServer(config(dir, [], { tlsSniCertKeys: [mismatched] })), /private key does not match/);
    });
  });

  void it('parses cert,key[:names] and takes CN (unless an IP) and DNS SANs as names', async () => {
    assert.deepEqual(parseSniCertKey('a.crt,a.key'), { certFile: 'a.crt', keyFile: 'a.key', names: [] });
    assert.deepEqual(parseSniCertKey('a.crt,a.key:x.test, *.y.test'), { certFile: 'a.crt', keyFile: 'a.key', names: ['x.test', '*.y.test'] });
    assert.throws(() => parseSniCertKey('only-one'), /--tls-sni-cert-key/);
    const ca = await makeCA('names-ca');
    const c = await makeServingCert(ca.cert, ca.key, 'cn.example.com', ['san.example.com', '10.0.0.1']);
    assert.deepEqual(certificateNames(new X509Certificate(c.cert)), ['cn.example.com', 'san.example.com']);
    const ipCN = await makeServingCert(ca.cert, ca.key, '10.0.0.2', ['san.example.com']);
    assert.deepEqual(certificateNames(new X509Certificate(ipCN.cert)), ['san.example.com']);
  });
});
