// Reading a container's CRI log file for /containerLogs (kubelet's pkg/kubelet/kuberuntime/logs
// ReadLogs): records are parsed, the CRI prefix stripped, and the content written as the
// container printed it (a P record without its newline, an F record with one).
//   tailLines   only the last N records of the file (0: none)
//   since       records older than sinceSeconds / sinceTime are skipped
//   timestamps  each record is prefixed with its RFC 3339 timestamp and a space
//   limitBytes  output stops after that many bytes (the last record cut short)
//   follow      after the end, wait for more until the container is no longer running
import { watch } from 'node:fs';
import { open, stat } from 'node:fs/promises';

export interface LogOptions {
  follow?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  since?: Date;
  limitBytes?: number;
}

export interface LogSink {
  /** Writes a chunk; resolves when the consumer is ready for more. */
  write(chunk: string): Promise<void>;
  /** True once the consumer went away. */
  readonly closed: boolean;
}

const RECORD = /^(\S+) (stdout|stderr) ([FP]) ?(.*)$/;

/** Offset where the last `n` lines of `buf` begin (kubelet's tail.FindTailLineStartIndex). */
export function tailStart(buf: Buffer, n: number): number {
  if (n <= 0) return buf.length;
  let end = buf.length;
  if (end > 0 && buf[end - 1] === 0x0a) end--;
  let count = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (buf[i] === 0x0a && ++count === n) return i + 1;
  }
  return 0;
}

/** Streams the log at `path` to `sink`; `running` says whether more may come (for follow). */
export async function streamLog(path: string, o: LogOptions, sink: LogSink, running: () => Promise<boolean>): Promise<void> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const head = Buffer.alloc(size);
    if (size > 0) await fh.read(head, 0, size, 0);
    let offset = o.tailLines !== undefined ? tailStart(head, o.tailLines) : 0;
    let left = o.limitBytes ?? Infinity;
    let rest = '';
    const emit = async (text: string, final: boolean): Promise<boolean> => {
      const lines = (rest + text).split('\n');
      rest = final ? '' : lines.pop()!;
      let out = '';
      for (const line of lines) {
        const m = RECORD.exec(line);
        if (!m) continue;
        if (o.since && Date.parse(m[1]!) < o.since.getTime()) continue;
        out += (o.timestamps ? `${m[1]} ` : '') + m[4] + (m[3] === 'F' ? '\n' : '');
      }
      if (out === '') return left > 0;
      const bytes = Buffer.from(out);
      const cut = bytes.length > left ? bytes.subarray(0, left).toString('utf8') : out;
      left -= Math.min(left, bytes.length);
      await sink.write(cut);
      return left > 0;
    };
    if (!(await emit(head.subarray(offset).toString('utf8'), !o.follow))) return;
    offset = size;
    if (!o.follow) return;
    let wake: (() => void) | undefined;
    const watcher = watch(path, () => wake?.());
    watcher.on('error', () => wake?.());
    try {
      for (;;) {
        if (sink.closed) return;
        const grown = (await stat(path)).size;
        if (grown > offset) {
          const chunk = Buffer.alloc(grown - offset);
          await fh.read(chunk, 0, chunk.length, offset);
          offset = grown;
          if (!(await emit(chunk.toString('utf8'), false))) return;
          continue;
        }
        if (!(await running())) {
          if ((await stat(path)).size > offset) continue;
          await emit('', true);
          return;
        }
        // Wait for a change of the file, at most 1 s (then look at the container again).
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 1000);
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      watcher.close();
    }
  } finally {
    await fh.close();
  }
}

interface StatusLike {
  containerStatuses?: { name: string; containerID?: string; state: ContainerStateLike; lastState: ContainerStateLike }[];
  initContainerStatuses?: { name: string; containerID?: string; state: ContainerStateLike; lastState: ContainerStateLike }[];
  ephemeralContainerStatuses?: { name: string; containerID?: string; state: ContainerStateLike; lastState: ContainerStateLike }[];
}
interface ContainerStateLike {
  running?: unknown;
  waiting?: { reason?: string };
  terminated?: { containerID?: string };
}

/**
 * The container whose log /containerLogs reads, or why there is none (kubelet's
 * validateContainerLogStatus, same wording): the running or terminated instance, or with
 * `previous` the one before it.
 */
export function logContainerID(status: StatusLike | undefined, podName: string, container: string, previous: boolean): { id: string } | { error: string } {
  const cs = [...(status?.containerStatuses ?? []), ...(status?.initContainerStatuses ?? []), ...(status?.ephemeralContainerStatuses ?? [])].find((c) => c.name === container);
  if (!cs) return { error: `container "${container}" in pod "${podName}" is not available` };
  const { state, lastState } = cs;
  if (previous) {
    const id = lastState.terminated?.containerID;
    return id ? { id } : { error: `previous terminated container "${container}" in pod "${podName}" not found` };
  }
  if (state.running) return cs.containerID ? { id: cs.containerID } : { error: `container "${container}" in pod "${podName}" is not available` };
  if (state.terminated) {
    const id = state.terminated.containerID || lastState.terminated?.containerID;
    return id ? { id } : { error: `container "${container}" in pod "${podName}" is terminated` };
  }
  if (lastState.terminated) {
    const id = lastState.terminated.containerID;
    return id ? { id } : { error: `container "${container}" in pod "${podName}" is terminated` };
  }
  const reason = state.waiting?.reason ?? '';
  if (reason === 'ErrImagePull') return { error: `container "${container}" in pod "${podName}" is waiting to start: image can't be pulled` };
  if (reason === 'ImagePullBackOff') return { error: `container "${container}" in pod "${podName}" is waiting to start: trying and failing to pull image` };
  return { error: `container "${container}" in pod "${podName}" is waiting to start: ${reason}` };
}
