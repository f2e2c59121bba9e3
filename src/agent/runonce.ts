// --runonce (kubelet's runonce.go): start the pods of the local sources (--pod-manifest-path,
// --manifest-url), check until every container of every pod runs (checks after 1 s, 2 s, 4 s, ...,
// ten in all, as kubelet's runOnceMaxRetries with its doubling delay), and report each pod.
// The caller then exits; it refuses --enable-server before ever getting here.
import type { Agent } from './agent.js';
import type { Pod } from './types.js';
import { podFullName } from './types.js';

export interface RunOnceResult {
  ok: boolean;
  /** One line per pod: `pod "<ns>/<name>": Running, containers running: a, b`, or what does not run. */
  lines: string[];
}

const RETRIES = 10;

function report(pod: Pod): { running: boolean; line: string } {
  const st = pod.status;
  const statuses = st?.containerStatuses ?? [];
  const notRunning = pod.spec.containers
    .map((c) => ({ c, s: statuses.find((x) => x.name === c.name) }))
    .filter(({ s }) => !s?.state.running)
    .map(({ c, s }) => {
      const why = s?.state.waiting?.reason ?? (s?.state.terminated ? `terminated: ${s.state.terminated.reason ?? s.state.terminated.exitCode}` : 'not started');
      return `${c.name} (${why})`;
    });
  const phase = st?.phase ?? 'Pending';
  if (notRunning.length === 0 && statuses.length > 0) {
    return { running: true, line: `pod "${podFullName(pod)}": ${phase}, containers running: ${pod.spec.containers.map((c) => c.name).join(', ')}` };
  }
  return { running: false, line: `pod "${podFullName(pod)}": ${phase}, containers not running: ${notRunning.join(', ')}` };
}

/** Waits for the agent's pods to run (or the retries to run out) and reports them. */
export async function runOnce(agent: Agent, delayMs = 1000): Promise<RunOnceResult> {
  let delay = delayMs;
  for (let attempt = 0; ; attempt++) {
    const pods = agent.pods();
    if (pods.length === 0) return { ok: false, lines: ['no pods: --runonce runs the pods of --pod-manifest-path and --manifest-url, and they hold none'] };
    const reports = pods.map(report);
    if (reports.every((r) => r.running) || attempt >= RETRIES - 1) {
      return { ok: reports.every((r) => r.running), lines: reports.map((r) => r.line) };
    }
    await new Promise((r) => setTimeout(r, delay));
    delay *= 2;
  }
}
