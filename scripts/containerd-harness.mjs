#!/usr/bin/env node
// Starts a throwaway containerd for orchlet (the test harness of test/helpers/containerd.ts): its own
// socket in a temporary directory, a CNI bridge, and local busybox and pause images imported, so
// that pods run without any image registry. Prints how to point orchlet at it, then runs until
// Ctrl-C (or SIGTERM) and tears everything down (sandboxes, containerd, the bridge, cgroups, mounts).
//
// Needs root and the Debian packages containerd, runc, containernetworking-plugins, busybox-static and iptables;
// run `npm run build` first.
//
//   sudo node scripts/containerd-harness.mjs
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const helper = fileURLToPath(new URL('../dist/test/helpers/containerd.js', import.meta.url));
if (!existsSync(helper)) {
  console.error('containerd-harness: dist/ is missing; run `npm run build` first');
  process.exit(1);
}
const { missingPrograms, startContainerd } = await import(helper);

const missing = missingPrograms();
if (missing.length > 0) {
  console.error(`containerd-harness: missing ${missing.join(', ')}`);
  console.error('  apt-get install containerd runc containernetworking-plugins busybox-static iptables (as root)');
  process.exit(1);
}

const h = await startContainerd({ onLog: process.argv.includes('-v') ? (l) => console.error(`containerd: ${l}`) : undefined });
console.log(`containerd ${h.pid} is up on ${h.endpoint}`);
console.log(`  pod network: bridge ${h.bridge}, ${h.subnet} (host side ${h.gateway})`);
console.log(`  images: ${h.images.busybox} (busybox-static), ${h.images.pause} (the sandbox image) and ${h.images.spare} (unused)`);
console.log(`  CNI: ${h.dir}/cni/10-orch.conflist (bridge, portmap for hostPort, loopback)`);
console.log('run orchlet against it, e.g.:');
console.log(
  `  bin/orchlet --container-runtime=remote --container-runtime-endpoint=${h.endpoint} --cgroup-root=${h.cgroupRoot} --pod-infra-container-image=${h.images.pause} --pod-manifest-path=<dir>`,
);
console.log('Ctrl-C stops containerd and removes everything it made.');

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.log('\ntearing down...');
  await h.stop();
  console.log('done');
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
setInterval(() => {}, 1 << 30);
