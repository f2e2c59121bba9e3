/**
 * The cloud options on the real binaries: orch has no in-tree cloud providers, so bin/orch-apiserver and
 * bin/orchlet accept an empty --cloud-provider and 'external', read and check --cloud-config and the
 * container-registry configuration, and refuse any other provider with a message saying so.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.js';

const APISERVER = fileURLToPath(new URL('../../../bin/orch-apiserver', import.meta.url));
const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

interface Outcome {
  /** Exit code, or 'started' when the program reached `ready` in its standard error (it is then stopped). */
  code: number | null | 'started';
  stderr: string;
}

/** Runs a binary until it exits or prints `ready`. */
function run(bin: string, args: string[], ready: RegExp): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let started = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      stderr += d;
      if (!started && ready.test(stderr)) {
        started = true;
        child.kill('SIGTERM');
      }
    });
    child.on('close', (code) => resolve({ code: started ? 'started' : code, stderr }));
  });
}

void describe('cloud options', () => {
  const files = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-cloud-'));
    const good = join(dir, 'cloud.conf');
    await writeFile(good, '# provider settings\n[Global]\nproject-id = demo\n\n[LoadBalancer "lb1"]\nsubnet-id = s1 ; comment\nenabled\n');
    const bad = join(dir, 'bad.conf');
    await writeFile(bad, '[Global]\nproject-id = demo\n== broken\n');
    const orphan = join(dir, 'orphan.conf');
    await writeFile(orphan, 'project-id = demo\n');
    const registry = join(dir, 'registry.json');
    await writeFile(registry, JSON.stringify({ aadClientId: 'id', aadClientSecret: 'secret' }));
    const badRegistry = join(dir, 'registry-bad.json');
    await writeFile(badRegistry, '["not", "an", "object"]');
    return { dir, good, bad, orphan, registry, badRegistry };
  };

  void it('orch-apiserver: external or none accepted with the files read; other providers and bad files refused', async () => {
    const f = await files();
    try {
      const base = ['--bind-address=127.0.0.1', '--data-dir=:memory:', `--cert-dir=${join(f.dir, 'certs')}`];
      const serving = /serving on https:/;
      const started = await run(
        APISERVER,
        [...base, `--secure-port=${await freePort()}`, '--cloud-provider=external', `--cloud-config=${f.good}`, `--azure-container-registry-config=${f.registry}`, '--cloud-provider-gce-l7lb-src-cidrs=10.0.0.0/8,192.168.0.0/16'],
        serving,
      );
      assert.equal(started.code, 'started', started.stderr);
      const none = await run(APISERVER, [...base, `--secure-port=${await freePort()}`, '--cloud-provider=', `--cloud-config=${f.good}`], serving);
      assert.equal(none.code, 'started', none.stderr);

      for (const provider of ['aws', 'gce', 'azure', 'openstack', 'vsphere', 'mycloud']) {
        const r = await run(APISERVER, [...base, `--cloud-provider=${provider}`], serving);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`--cloud-provider: cloud provider "${provider}" is not supported: orch has no in-tree cloud providers`));
      }
      const missing = await run(APISERVER, [...base, '--cloud-provider=external', `--cloud-config=${join(f.dir, 'nope.conf')}`], serving);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /--cloud-config: couldn't read .*nope\.conf: ENOENT/);
      const bad = await run(APISERVER, [...base, `--cloud-config=${f.bad}`], serving);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /--cloud-config: .*bad\.conf: line 3: invalid line "== broken"/);
      const orphan = await run(APISERVER, [...base, `--cloud-config=${f.orphan}`], serving);
      assert.equal(orphan.code, 1);
      assert.match(orphan.stderr, /line 1: variable outside of a section/);
      const badRegistry = await run(APISERVER, [...base, `--azure-container-registry-config=${f.badRegistry}`], serving);
      assert.equal(badRegistry.code, 1);
      assert.match(badRegistry.stderr, /--azure-container-registry-config: .*registry-bad\.json: the file must hold a JSON or YAML object/);
      const badCidr = await run(APISERVER, [...base, '--cloud-provider-gce-l7lb-src-cidrs=10.0.0.0/33'], serving);
      assert.equal(badCidr.code, 1);
      assert.match(badCidr.stderr, /--cloud-provider-gce-l7lb-src-cidrs/);
    } finally {
      await rm(f.dir, { recursive: true, force: true });
    }
  });

  void it('orchlet: external accepted with the files read; other providers and bad files refused', async () => {
    const f = await files();
    try {
      const manifests = join(f.dir, 'manifests');
      await mkdir(manifests);
      const base = ['--make-iptables-util-chains=false', '--pod-manifest-path', manifests, '--root-dir', join(f.dir, 'root'), '--read-only-port', '0', '--healthz-port', '0', '--cert-dir', join(f.dir, 'pki'), '--address', '127.0.0.1'];
      const serving = /running standalone as node .* serving on port/;
      const started = await run(
        ORCHLET,
        [...base, '--port', String(await freePort()), '--cloud-provider', 'external', '--cloud-config', f.good, '--azure-container-registry-config', f.registry],
        serving,
      );
      assert.equal(started.code, 'started', started.stderr);

      const aws = await run(ORCHLET, [...base, '--cloud-provider', 'aws'], serving);
      assert.equal(aws.code, 1);
      assert.match(aws.stderr, /--cloud-provider: cloud provider "aws" is not supported: orch has no in-tree cloud providers; leave it empty, or set --cloud-provider=external/);
      const bad = await run(ORCHLET, [...base, '--cloud-provider', 'external', '--cloud-config', f.bad], serving);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /--cloud-config: .*line 3: invalid line/);
      const missing = await run(ORCHLET, [...base, '--azure-container-registry-config', join(f.dir, 'none.json')], serving);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /--azure-container-registry-config: couldn't read .*none\.json: ENOENT/);
    } finally {
      await rm(f.dir, { recursive: true, force: true });
    }
  });
});
