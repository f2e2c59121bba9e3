// End to end through kubectl: what pods get from orchlet's built-in process runtime: env from
// ConfigMaps, Secrets and the downward API; volumes laid out as kubelet lays them out; init
// containers in order; liveness and readiness probes; log rotation; --max-pods admission.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { freePort, startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

void describe('orchlet pods: env, volumes, init containers, probes, logs, admission (kubectl)', () => {
  let c: TestCluster;
  let a: TestAgent;
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const pod = (name: string, nodeName: string, spec: Json): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: { nodeName, terminationGracePeriodSeconds: 1, ...spec },
  });
  const waitPod = async (name: string, what: string, check: (p: Json) => boolean, timeoutMs = 20_000): Promise<Json> => {
    let last: Json | undefined;
    try {
      return await waitFor(
        `pod ${name}: ${what}`,
        async () => {
          last = await kubectlJSON(['get', 'pod', name]);
          return last && check(last) ? last : undefined;
        },
        timeoutMs,
      );
    } catch (err) {
      throw new Error(`${String(err)}; last status: ${JSON.stringify(last?.status)}`, { cause: err });
    }
  };
  const events = async (name: string): Promise<Json[]> => ((await kubectlJSON(['get', 'events', '--field-selector', `involvedObject.name=${name}`]))?.items ?? []) as Json[];
  const logs = async (name: string, container?: string): Promise<string> => (await c.kubectl(['logs', name, ...(container ? ['-c', container] : [])])).stdout;

  before(async () => {
    c = await startCluster();
    a = await startAgent(c, { extra: { containerLogs: { maxSizeBytes: 4096, maxFiles: 3, periodMs: 300 } } });
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  void it('gives containers env from ConfigMaps, Secrets and the downward API, and configMap/secret/downwardAPI/emptyDir volumes', async () => {
    assert.equal((await c.kubectl(['create', 'configmap', 'app-config', '--from-literal=greeting=hello', '--from-literal=color=blue', '--from-literal=1st=x'])).code, 0);
    assert.equal((await c.kubectl(['create', 'secret', 'generic', 'app-secret', '--from-literal=password=s3cr3t'])).code, 0);
    await create(
      pod('envvol', a.nodeName, {
        restartPolicy: 'Never',
        volumes: [
          { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'greeting', path: 'nested/greeting.txt', mode: 0o600 }] } },
          { name: 'sec', secret: { secretName: 'app-secret', defaultMode: 0o444 } },
          { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          { name: 'scratch', emptyDir: {} },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            // it stays running: the volumes of a pod that terminated are torn down, as kubelet does
            command: ['sh', '-c', 'echo "GREETING=$GREETING COLOR=$CFG_color POD=$POD NS=$NS NODE=$NODE IP=$IP MEM=$MEM ECHO=$ECHO"; cat $ORCH_ROOTFS/etc/secret/password; echo; cat $ORCH_ROOTFS/etc/info/labels; echo; echo written > $ORCH_ROOTFS/scratch/out; cat $ORCH_ROOTFS/scratch/out; exec sleep 600'],
            env: [
              { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'greeting' } } },
              { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
              { name: 'ECHO', value: '$(GREETING)-$(POD)' },
              { name: 'MISSING_OK', valueFrom: { secretKeyRef: { name: 'nope', key: 'x', optional: true } } },
            ],
            envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'app-config' } }, { configMapRef: { name: 'app-config' } }],
            resources: { limits: { memory: '64Mi' } },
            volumeMounts: [
              { name: 'cfg', mountPath: '/etc/cfg' },
              { name: 'sec', mountPath: '/etc/secret' },
              { name: 'info', mountPath: '/etc/info' },
              { name: 'scratch', mountPath: '/scratch' },
            ],
          },
        ],
      }),
    );
    const p = await waitPod('envvol', 'Running', (x) => x.status?.phase === 'Running' || x.status?.phase === 'Failed');
    assert.equal(p.status.phase, 'Running', JSON.stringify(p.status));
    const out = await waitFor('the output', async () => {
      const text = await logs('envvol');
      return text.endsWith('written\n') ? text : undefined;
    });
    assert.equal(
      out,
      `GREETING=hello COLOR=blue POD=envvol NS=default NODE=${a.nodeName} IP=127.0.0.1 MEM=64 ECHO=hello-envvol\ns3cr3t\napp="envvol"\nwritten\n`,
    );
    // kubelet's layout under --root-dir, with the atomic writer's ..data link
    const vols = join(a.rootDir, 'pods', p.metadata.uid, 'volumes');
    assert.deepEqual((await readdir(vols)).sort(), ['kubernetes.io~configmap', 'kubernetes.io~downward-api', 'kubernetes.io~empty-dir', 'kubernetes.io~secret']);
    const cfg = join(vols, 'kubernetes.io~configmap', 'cfg');
    assert.match(await readlink(join(cfg, '..data')), /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
    assert.equal(await readlink(join(cfg, 'nested')), '..data/nested');
    assert.equal(await readFile(join(cfg, 'nested', 'greeting.txt'), 'utf8'), 'hello');
    assert.equal((await lstat(join(cfg, '..data', 'nested', 'greeting.txt'))).mode & 0o777, 0o600);
    assert.equal((await lstat(join(vols, 'kubernetes.io~secret', 'sec', '..data', 'password'))).mode & 0o777, 0o444);
    assert.equal(await readFile(join(vols, 'kubernetes.io~downward-api', 'info', 'name'), 'utf8'), 'envvol');
    const invalid = await waitFor('InvalidEnvironmentVariableNames', async () => (await events('envvol')).find((e) => e.reason === 'InvalidEnvironmentVariableNames'));
    assert.equal(invalid.message, 'Keys [1st] from the EnvFrom configMap default/app-config were skipped since they are considered invalid environment variable names.');
  });

  void it('refuses to start a container whose ConfigMap or key is missing (CreateContainerConfigError) and starts it once it exists', async () => {
    await create(
      pod('needs-config', a.nodeName, {
        containers: [
          { name: 'main', image: 'busybox', command: ['sh', '-c', 'echo "value=$V"; exec sleep 600'], env: [{ name: 'V', valueFrom: { configMapKeyRef: { name: 'late-config', key: 'v' } } }] },
        ],
      }),
    );
    const p = await waitPod('needs-config', 'CreateContainerConfigError', (x) => x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError');
    assert.equal(p.status.containerStatuses[0].state.waiting.message, 'configmap "late-config" not found');
    assert.equal(p.status.phase, 'Pending');
    const failed = await waitFor('the Failed event', async () => (await events('needs-config')).find((e) => e.reason === 'Failed'));
    assert.equal(failed.message, 'Error: configmap "late-config" not found');
    // A ConfigMap without the key: still refused, with kubelet's message.
    assert.equal((await c.kubectl(['create', 'configmap', 'late-config', '--from-literal=other=1'])).code, 0);
    await waitPod('needs-config', 'missing key', (x) => x.status?.containerStatuses?.[0]?.state?.waiting?.message === "couldn't find key v in ConfigMap default/late-config");
    // With the key, the watch on the ConfigMap brings the pod up.
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late-config', namespace: 'default' }, data: { v: 'now' } };
    assert.equal((await c.kubectl(['replace', '-f', '-'], { input: JSON.stringify(cm) })).code, 0);
    await waitPod('needs-config', 'Running', (x) => x.status?.phase === 'Running');
    await waitFor('the log', async () => ((await logs('needs-config')) === 'value=now\n' ? true : undefined));
  });

  void it('reports a volume it cannot set up as FailedMount and keeps the pod ContainerCreating', async () => {
    await create(
      pod('no-volume', a.nodeName, {
        volumes: [{ name: 'cfg', configMap: { name: 'absent' } }],
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'], volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }],
      }),
    );
    const ev = await waitFor('FailedMount', async () => (await events('no-volume')).find((e) => e.reason === 'FailedMount'));
    assert.equal(ev.message, 'MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found');
    const p = await kubectlJSON(['get', 'pod', 'no-volume']);
    assert.equal(p?.status.containerStatuses[0].state.waiting.reason, 'ContainerCreating');
  });

  void it('runs init containers in order before the app container', async () => {
    await create(
      pod('init', a.nodeName, {
        restartPolicy: 'Never',
        volumes: [{ name: 'work', emptyDir: {} }],
        initContainers: [
          { name: 'first', image: 'busybox', command: ['sh', '-c', 'echo one >> $ORCH_ROOTFS/work/order'], volumeMounts: [{ name: 'work', mountPath: '/work' }] },
          { name: 'second', image: 'busybox', command: ['sh', '-c', 'sleep 0.3; echo two >> $ORCH_ROOTFS/work/order'], volumeMounts: [{ name: 'work', mountPath: '/work' }] },
        ],
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'cat $ORCH_ROOTFS/work/order'], volumeMounts: [{ name: 'work', mountPath: '/work' }] }],
      }),
    );
    const p = await waitPod('init', 'Succeeded', (x) => x.status?.phase === 'Succeeded');
    assert.deepEqual(p.status.initContainerStatuses.map((s: Json) => `${s.name}:${s.state.terminated.reason}`), ['first:Completed', 'second:Completed']);
    assert.ok(p.status.initContainerStatuses[1].state.terminated.startedAt >= p.status.initContainerStatuses[0].state.terminated.finishedAt);
    assert.equal(await logs('init'), 'one\ntwo\n');
    const init = await kubectlJSON(['get', 'pod', 'init']);
    assert.equal(init?.status.conditions.find((x: Json) => x.type === 'Initialized').status, 'True');
  });

  void it('restarts a container that fails its liveness probe, with Unhealthy and Killing events', async () => {
    await create(
      pod('liveness', a.nodeName, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'echo started; exec sleep 600'],
            livenessProbe: { exec: { command: ['sh', '-c', 'echo not well; exit 1'] }, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      }),
    );
    const p = await waitPod('liveness', 'restarted', (x) => (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 30_000);
    assert.equal(p.status.containerStatuses[0].lastState.terminated.exitCode, 143);
    const ev = await events('liveness');
    const unhealthy = ev.find((e) => e.reason === 'Unhealthy');
    assert.equal(unhealthy?.message, 'Liveness probe failed: not well\n');
    assert.equal(unhealthy?.type, 'Warning');
    assert.equal(ev.find((e) => e.reason === 'Killing')?.message, 'Container main failed liveness probe, will be restarted');
  });

  void it('reflects readiness probes (exec, httpGet, tcpSocket) in ready, Ready and ContainersReady', async () => {
    const port = await freePort();
    await create(
      pod('readiness', a.nodeName, {
        volumes: [{ name: 'flag', emptyDir: {} }],
        containers: [
          {
            name: 'gate',
            image: 'busybox',
            command: ['sh', '-c', 'sleep 1; touch $ORCH_ROOTFS/flag/ready; sleep 8; rm $ORCH_ROOTFS/flag/ready; exec sleep 600'],
            volumeMounts: [{ name: 'flag', mountPath: '/flag' }],
            readinessProbe: { exec: { command: ['sh', '-c', 'test -f $ORCH_ROOTFS/flag/ready'] }, periodSeconds: 1 },
          },
          {
            name: 'web',
            image: 'busybox',
            command: ['sh', '-c', `exec busybox httpd -f -p 127.0.0.1:${port} -h $ORCH_ROOTFS/flag`],
            volumeMounts: [{ name: 'flag', mountPath: '/flag' }],
            ports: [{ name: 'http', containerPort: port }],
            readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 1 },
            livenessProbe: { httpGet: { path: '/', port }, periodSeconds: 1, failureThreshold: 30 },
          },
        ],
      }),
    );
    const cond = (x: Json, t: string) => x.status?.conditions?.find((k: Json) => k.type === t)?.status;
    const notReady = await waitPod('readiness', 'Running, not ready', (x) => x.status?.phase === 'Running' && cond(x, 'Ready') === 'False');
    assert.equal(notReady.status.conditions.find((k: Json) => k.type === 'Ready').reason, 'ContainersNotReady');
    const ready = await waitPod('readiness', 'Ready', (x) => cond(x, 'Ready') === 'True' && cond(x, 'ContainersReady') === 'True');
    assert.deepEqual(ready.status.containerStatuses.map((s: Json) => s.ready), [true, true]);
    const again = await waitPod('readiness', 'not ready again', (x) => cond(x, 'Ready') === 'False');
    assert.equal(again.status.containerStatuses.find((s: Json) => s.name === 'gate').ready, false);
    assert.equal(again.status.containerStatuses.find((s: Json) => s.name === 'web').ready, true);
    assert.equal(again.status.conditions.find((k: Json) => k.type === 'Ready').message, 'containers with unready status: [gate]');
    // httpd answers 404 for '/': the liveness probe fails, recorded with kubelet's wording
    const unhealthy = await waitFor('Unhealthy from the HTTP probe', async () => (await events('readiness')).find((e) => e.reason === 'Unhealthy' && /HTTP probe/.test(e.message)));
    assert.equal(unhealthy.message, 'Liveness probe failed: HTTP probe failed with statuscode: 404');
  });

  void it('rotates container logs at --container-log-max-size, keeping --container-log-max-files', async () => {
    await create(
      pod('chatty', a.nodeName, {
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo "line $i of a chatty container"; sleep 0.01; done'] }],
      }),
    );
    const p = await waitPod('chatty', 'Running', (x) => x.status?.phase === 'Running');
    const dir = join(a.rootDir, 'pods', p.metadata.uid, 'containers', 'main');
    const files = await waitFor('rotated and compressed logs', async () => {
      const names = await readdir(dir).catch((): string[] => []);
      return names.some((n) => n.endsWith('.gz')) ? names : undefined;
    }, 30_000);
    assert.ok(files.includes('0.log'), files.join(' '));
    assert.ok(files.length <= 3, files.join(' '));
    assert.ok(files.every((n) => /^0\.log(\.\d{8}-\d{6}(\.gz)?)?$/.test(n)), files.join(' '));
    // kubectl logs keeps reading the current file
    assert.match(await logs('chatty'), /line \d+ of a chatty container\n$/);
    assert.equal((await c.kubectl(['delete', 'pod', 'chatty', '--wait=false'])).code, 0);
  });

  void it('fails pods beyond --max-pods with OutOfpods', async () => {
    const small = await startAgent(c, { extra: { maxPods: 1 } });
    try {
      await create(pod('first', small.nodeName, { containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }] }));
      await waitPod('first', 'Running', (x) => x.status?.phase === 'Running');
      await create(pod('second', small.nodeName, { containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }] }));
      const p = await waitPod('second', 'Failed', (x) => x.status?.phase === 'Failed');
      assert.equal(p.status.reason, 'OutOfpods');
      assert.equal(p.status.message, "Pod Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1");
      const ev = await waitFor('the OutOfpods event', async () => (await events('second')).find((e) => e.reason === 'OutOfpods'));
      assert.equal(ev.message, "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1");
      const table = await c.kubectl(['get', 'pod', 'second']);
      assert.match(table.stdout, /second\s+0\/1\s+OutOfpods\s/);
    } finally {
      await c.kubectl(['delete', 'pod', 'first', 'second', '--wait=false']);
      await small.stop();
    }
  });
});
