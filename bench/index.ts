/**
 * `npm run bench`: prints the figures of every benchmark. Arguments select benchmarks by name
 * (`node dist/bench/index.js storage`); BENCH_SCALE=0.1 runs a smaller workload.
 */
import { benchApi } from './api.js';
import { benchAudit } from './audit.js';
import { benchPodStart } from './podstart.js';
import { benchAuthz } from './authz.js';
import { benchContainerd } from './containerd.js';
import { benchStartup } from './startup.js';
import { benchStorage } from './storage.js';
import { benchProtobuf } from './protobuf.js';

const benches: Record<string, (scale: number) => Promise<unknown>> = {
  storage: benchStorage,
  api: benchApi,
  startup: benchStartup,
  audit: benchAudit,
  podstart: benchPodStart,
  authz: benchAuthz,
  containerd: benchContainerd,
  protobuf: benchProtobuf,
};

const scale = Number(process.env.BENCH_SCALE ?? '1');
const selected = process.argv.slice(2);
for (const [name, run] of Object.entries(benches)) {
  if (selected.length > 0 && !selected.includes(name)) continue;
  await run(scale);
}
