// --max-open-files: kubelet sets its own RLIMIT_NOFILE (soft and hard) to the value at start-up and
// only logs when it cannot. Node cannot call setrlimit, so the agent asks prlimit(1) (util-linux) to
// set the limit on the agent's own process; processes the agent starts afterwards (the built-in
// runtime's containers) inherit it, as kubelet's children do. Raising the hard limit above the
// current one needs CAP_SYS_RESOURCE: without it the error is logged and the agent goes on.
import { execFile } from 'node:child_process';

/** Sets RLIMIT_NOFILE of process `pid` (default: this one) to `n` (soft and hard); rejects with prlimit's reason. */
export function setMaxOpenFiles(n: number, pid: number = process.pid): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('prlimit', ['--pid', String(pid), `--nofile=${n}:${n}`], { timeout: 10_000 }, (err, _out, stderr) => {
      if (err) reject(new Error(String(stderr).trim() || err.message));
      else resolve();
    });
  });
}

/** The soft and hard RLIMIT_NOFILE of process `pid`, from /proc (Linux). */
export async function maxOpenFilesOf(pid: number = process.pid): Promise<{ soft: number; hard: number } | undefined> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(`/proc/${pid}/limits`, 'utf8').catch(() => '');
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(text);
  if (!m) return undefined;
  const n = (v: string): number => (v === 'unlimited' ? Infinity : Number(v));
  return { soft: n(m[1]!), hard: n(m[2]!) };
}
