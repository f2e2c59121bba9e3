/**
 * klog's output options (src/util/log.ts, src/agent/logging.ts): per-severity files in --log-dir with their
 * symlinks, --log-file, size rotation, --one-output, --stderrthreshold, --alsologtostderr, --skip-headers,
 * --skip-log-headers, --add-dir-header, --log-backtrace-at, JSON split stream; and bin/orchlet writing its log
 * files, warning about the deprecated klog flags and refusing them with --logging-format=json.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../src/util/log.js';
import { agentLogger, checkLoggingOptions, infoBufferBytes, type AgentLoggingOptions } from '../../src/agent/logging.js';
import { parseAgentOptions } from '../../src/agent/options.js';
import { eventually } from '../helpers/eventually.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'orch-logging-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const FILES = { program: 'orchlet', host: 'node1', user: 'alice' };
const fixedNow = () => new Date(2026, 10, 22, 8, 9, 10, 123).getTime();

void describe('klog file output', () => {
  void it('writes per-severity files with symlinks; a line goes to its file and every lower one', () => {
    const dir = tempDir();
    const stderr: string[] = [];
    const log = createLogger({ now: fixedNow, pid: 42, sink: (t) => stderr.push(t), files: { ...FILES, logtostderr: false, logDir: dir } });
    log.info('hello');
    log.warning('careful');
    log.error('broken');
    log.stop();
    const name = (sev: string) => `orchlet.node1.alice.log.${sev}.20261122-080910.42`;
    for (const sev of ['INFO', 'WARNING', 'ERROR']) assert.equal(readlinkSync(join(dir, `orchlet.${sev}`)), name(sev));
    const info = readFileSync(join(dir, 'orchlet.INFO'), 'utf8');
    assert.match(info, /^Log file created at: 2026\/11\/22 08:09:10\nRunning on machine: node1\n/);
    assert.match(info, /\nI1122 08:09:10\.123000 {6}42 logging\.test\.[jt]s:\d+\] hello\n/);
    assert.match(info, /careful/);
    assert.match(info, /broken/);
    const warning = readFileSync(join(dir, 'orchlet.WARNING'), 'utf8');
    assert.doesNotMatch(warning, /hello/);
    assert.match(warning, /careful[\s\S]*broken/);
    assert.doesNotMatch(readFileSync(join(dir, 'orchlet.ERROR'), 'utf8'), /careful/);
    // --stderrthreshold's default (ERROR): only the error also reached standard error.
    assert.equal(stderr.length, 1);
    assert.match(stderr[0]!, /^E.*broken\n$/);
  });

  void it('--one-output, --skip-log-headers, --skip-headers, --alsologtostderr', () => {
    const dir = tempDir();
    const stderr: string[] = [];
    const log = createLogger({
      sink: (t) => stderr.push(t),
      skipHeaders: true,
      files: { ...FILES, logtostderr: false, alsologtostderr: true, logDir: dir, oneOutput: true, skipLogHeaders: true },
    });
    log.info('one');
    log.error('two');
    log.stop();
    assert.equal(readFileSync(join(dir, 'orchlet.INFO'), 'utf8'), 'one\n');
    assert.equal(readFileSync(join(dir, 'orchlet.ERROR'), 'utf8'), 'two\n');
    assert.equal(existsSync(join(dir, 'orchlet.WARNING')), false);
    assert.deepEqual(stderr, ['one\n', 'two\n']);
  });

  void it('--log-file takes every severity once; --stderrthreshold=0 copies all to standard error', () => {
    const dir = tempDir();
    const file = join(dir, 'agent.log');
    const stderr: string[] = [];
    const log = createLogger({ sink: (t) => stderr.push(t), files: { ...FILES, logtostderr: false, logFile: file, stderrthreshold: 0, skipLogHeaders: true } });
    log.info('a');
    log.warning('b');
    log.error('c');
    log.stop();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.deepEqual(lines.map((l) => `${l[0]!}${l.slice(-1)}`), ['Ia', 'Wb', 'Ec']);
    assert.equal(stderr.length, 3);
    assert.deepEqual(readdirSync(dir), ['agent.log']);
  });

  void it('rotates at --log-file-max-size: a new file in --log-dir, the single --log-file started again', () => {
    const dir = tempDir();
    let t = fixedNow();
    const max = 2048 / (1024 * 1024); // 2 KiB, in megabytes
    // The clock moves a second per call, so that each new file gets its own name.
    const log = createLogger({ now: () => (t += 1000), files: { ...FILES, logtostderr: false, logDir: dir, logFileMaxSizeMB: max } });
    const line = 'x'.repeat(200);
    for (let i = 0; i < 30; i++) log.info(`${i} ${line}`);
    log.stop();
    const infos = readdirSync(dir)
      .filter((f) => f.includes('.log.INFO.'))
      .sort();
    assert.ok(infos.length >= 3, `expected rotated files, got ${infos.join(', ')}`);
    for (const f of infos) assert.ok(readFileSync(join(dir, f)).length < 2048);
    assert.equal(readlinkSync(join(dir, 'orchlet.INFO')), infos[infos.length - 1]);
    assert.match(readFileSync(join(dir, 'orchlet.INFO'), 'utf8'), /29 x/);
    assert.match(readFileSync(join(dir, infos[0]!), 'utf8'), / 0 x/);

    const file = join(dir, 'single.log');
    const single = createLogger({ files: { ...FILES, logtostderr: false, logFile: file, logFileMaxSizeMB: max } });
    for (let i = 0; i < 30; i++) single.info(`${i} ${line}`);
    single.stop();
    const text = readFileSync(file, 'utf8');
    assert.ok(text.length < 2048);
    assert.match(text, /29 x/);
    assert.doesNotMatch(text, / 0 x/);
  });

  void it('--add-dir-header and --log-backtrace-at', () => {
    const out: string[] = [];
    const log = createLogger({ sink: (t) => out.push(t), addDirHeader: true, backtraceAt: 'logging.test.ts:1' });
    log.info('dir');
    assert.match(out[0]!, / agent\/logging\.test\.[jt]s:\d+\] dir\n$/);
    const stack = new Error('x').stack!.split('\n')[1]!;
    const line = Number(/:(\d+):\d+\)?$/.exec(stack)![1]) + 3; // the traced.info('traced') line
    const traced = createLogger({ sink: (t) => out.push(t), backtraceAt: `logging.test.ts:${line}` });
    traced.info('traced');
    traced.info('not traced');
    assert.match(out[1]!, /traced\n\s+at /);
    assert.equal(out[2]!.split('\n').length, 2);
    assert.throws(() => createLogger({ backtraceAt: 'nofile:3' }), /expect file/);
  });

  void it('JSON split stream: info to standard output, errors to standard error', () => {
    const err: string[] = [];
    const std: string[] = [];
    const log = createLogger({ format: 'json', jsonSplitStream: true, sink: (t) => err.push(t), stdoutSink: (t) => std.push(t) });
    log.info('i');
    log.warning('w');
    log.error('e');
    assert.deepEqual(
      std.map((t) => (JSON.parse(t) as { msg: string }).msg),
      ['i', 'w'],
    );
    assert.deepEqual(
      err.map((t) => (JSON.parse(t) as { msg: string }).msg),
      ['e'],
    );
    assert.equal(infoBufferBytes('64Ki'), 65536);
    assert.equal(infoBufferBytes('100'), 100);
    assert.throws(() => infoBufferBytes('lots'), /not a size/);
  });
});

void describe('agent logging options', () => {
  const opts = (argv: string[]): AgentLoggingOptions => parseAgentOptions(argv);

  void it('a non-text format refuses klog flags, as component-base 1.23', () => {
    assert.throws(() => checkLoggingOptions(opts(['--logging-format=json', '--log-dir=/tmp'])), /Non-default format doesn't honor flag: log-dir/);
    assert.throws(() => checkLoggingOptions(opts(['--logging-format=json', '--logtostderr=false'])), /honor flag: logtostderr/);
    checkLoggingOptions(opts(['--logging-format=json', '-v=3', '--log-json-split-stream']));
    checkLoggingOptions(opts(['--log-dir=/tmp', '--logtostderr=false', '--one-output']));
  });

  void it('the agent logger honours -v and the file options', () => {
    const dir = tempDir();
    const log = agentLogger(opts([`--log-dir=${dir}`, '--logtostderr=false', '-v=2']), 'orchlet');
    log.v(2).info('level two');
    log.v(3).info('level three');
    log.stop();
    const text = readFileSync(join(dir, 'orchlet.INFO'), 'utf8');
    assert.match(text, /level two/);
    assert.doesNotMatch(text, /level three/);
  });

  const run = (args: string[], untilFile?: string) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (code) => resolve({ code, stderr }));
      if (untilFile) {
        void eventually(`${untilFile} says the agent runs`, () => existsSync(untilFile) && /running standalone/.test(readFileSync(untilFile, 'utf8')), {
          timeoutMs: 20_000,
        }).finally(() => child.kill('SIGTERM'));
      }
    });

  void it('bin/orchlet writes --log-dir files and --log-file, with the deprecation warnings', async () => {
    const dir = tempDir();
    const base = [`--root-dir=${join(dir, 'root')}`, `--pod-manifest-path=${join(dir, 'manifests')}`, '--enable-server=false', '--fail-swap-on=false', '--log-flush-frequency=100ms'];
    const logs = join(dir, 'logs');
    mkdirSync(logs); // as klog, a missing --log-dir falls back to the temporary directory
    // with deprecated options that are accepted (src/agent/deprecations.ts)
    const deprecated = ['--cni-bin-dir=/nowhere', '--really-crash-for-testing', '--experimental-check-node-capabilities-before-mount'];
    const inDir = await run([...base, ...deprecated, '--logtostderr=false', `--log-dir=${logs}`], join(logs, 'orchlet.INFO'));
    assert.match(inDir.stderr, /Flag --cni-bin-dir has been deprecated, will be removed along with dockershim\./);
    assert.match(inDir.stderr, /Flag --log-dir has been deprecated, will be removed in a future release, see https:\/\/github\.com\/kubernetes\/enhancements/);
    assert.match(inDir.stderr, /Flag --logtostderr has been deprecated/);
    assert.doesNotMatch(inDir.stderr, /running standalone/);
    assert.match(readlinkSync(join(logs, 'orchlet.INFO')), /^orchlet\.[^.]+\.[^.]+\.log\.INFO\.\d{8}-\d{6}\.\d+$/);

    const file = join(dir, 'orchlet.log');
    const single = await run([...base, '--logtostderr=false', `--log-file=${file}`, '--skip-log-headers'], file);
    assert.doesNotMatch(single.stderr, /running standalone/);
    assert.match(readFileSync(file, 'utf8'), /^[IWE]\d{4} /);

    const refused = await run([...base, '--logging-format=json', `--log-dir=${logs}`]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Non-default format doesn't honor flag: log-dir/);
  });
});
