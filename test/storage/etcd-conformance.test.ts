import { describe, it } from 'node:test';
import { openEtcd } from '../../src/storage/etcd.js';
import { requireBinary } from '../helpers/binaries.js';
import { startEtcd } from '../helpers/etcd.js';
import { storageConformance } from './conformance.js';

if (requireBinary(undefined, 'etcd')) {
  storageConformance('etcd', async () => {
    const etcd = await startEtcd();
    const kv = await openEtcd({ endpoints: [etcd.endpoint] });
    return {
      kv,
      cleanup: async () => {
        await kv.close();
        await etcd.cleanup();
      },
    };
  });
} else {
  describe('storage conformance: etcd', () => {
    it('needs the etcd binary', (t) => t.skip('etcd is not installed (Debian package etcd-server)'));
  });
}
