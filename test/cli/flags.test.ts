import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  FEATURE_GATES,
  FlagError,
  camelCase,
  changeFeatureGates,
  flag,
  flagGroup,
  formatDefault,
  formatDuration,
  formatHelp,
  isCIDR,
  parseDuration,
  parseFlags,
  refuseLaterOptions,
  resolveFeatureGates,
  toOptions,
  unknownFeatureGate,
  type FeatureGateSpec,
} from '../../src/util/flags.js';

const SPECS = [
  ...flagGroup('First group', [
    flag('flag-bool', 'bool', 'false', 'A bool.', { status: 'supported' }),
    flag('on-bool', 'bool', 'true', 'A bool on by default.', { status: 'supported' }),
    flag('count', 'int', '6443', 'An int.', { status: 'supported', aliases: ['old-count'] }),
    flag('small', 'int32', undefined, 'An int32.', { status: 'supported' }),
    flag('size', 'uint', '1800', 'A uint.', { status: 'supported' }),
    flag('ratio', 'float', undefined, 'A float.', { status: 'supported', validate: (v) => (v <= 0.02 ? undefined : 'must be at most 0.02') }),
    flag('name', 'string', undefined, 'A string.', { status: 'supported' }),
    flag('named', 'string', 'x', 'A string with a default.', { status: 'supported' }),
    flag('list', 'strings', 'a,b', 'A list.', { status: 'supported' }),
    flag('one-each', 'strings', undefined, 'A list, one entry per use.', { status: 'supported', noSplit: true }),
    flag('picked', 'strings', undefined, 'A list of known entries.', { status: 'supported', values: ['A', 'B'] }),
    flag('wait', 'duration', '5m0s', 'A duration.', { status: 'supported' }),
  ]),
  ...flagGroup('Second group', [
    flag('labels', 'stringToString', undefined, 'A stringToString.', { status: 'supported' }),
    flag('map', 'mapStringString', 'a=1', 'A map.', { status: 'supported' }),
    flag('thresholds', 'mapStringString', 'mem<100Mi', 'A map with <.', { status: 'supported', separator: '<' }),
    flag('pairs', 'keyValue', undefined, 'Key-value pairs.', { status: 'supported' }),
    flag('claim', 'keyValue', undefined, 'One pair per use.', { status: 'supported', noSplit: true }),
    flag('gates', 'mapStringBool', undefined, 'Gates.', { status: 'supported' }),
    flag('headers', 'multimap', undefined, 'Headers.', { status: 'supported' }),
    flag('ranges', 'cidrs', '10.0.0.0/8', 'CIDRs.', { status: 'supported' }),
    flag('ports', 'portRange', '30000-32767', 'Ports.', { status: 'supported' }),
    flag('mode', 'enum', 'lease', 'A choice.', { status: 'supported', values: ['master-count', 'lease', 'none'] }),
    flag('addr', 'ip', undefined, 'An address.', { status: 'supported' }),
    flag('verbosity', 'int', undefined, 'Verbosity.', { status: 'supported', short: 'v' }),
    flag('help', 'bool', undefined, 'Help.', { status: 'supported', short: 'h' }),
    flag('future', 'string', undefined, 'Not built yet.'),
  ]),
] as const;

function parse(argv: string[]) {
  const parsed = parseFlags(argv, SPECS, { program: 'test-prog' });
  return { parsed, o: toOptions(SPECS, parsed) };
}

function throwsFlag(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof FlagError, `expected FlagError, got ${String(e)}`);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
}

void describe('flags: defaults', () => {
  void it('gives every option its default, zero values when the table has none', () => {
    const { o, parsed } = parse([]);
    assert.equal(o.flagBool, false);
    assert.equal(o.onBool, true);
    assert.equal(o.count, 6443);
    assert.equal(o.small, 0);
    assert.equal(o.size, 1800);
    assert.equal(o.ratio, 0);
    assert.equal(o.name, undefined);
    assert.equal(o.named, 'x');
    assert.deepEqual(o.list, ['a', 'b']);
    assert.deepEqual(o.oneEach, []);
    assert.equal(o.wait, 300_000);
    assert.deepEqual(o.labels, {});
    assert.deepEqual(o.map, { a: '1' });
    assert.deepEqual(o.thresholds, { mem: '100Mi' });
    assert.deepEqual(o.ranges, ['10.0.0.0/8']);
    assert.deepEqual(o.ports, { min: 30000, max: 32767 });
    assert.equal(o.mode, 'lease');
    assert.equal(o.addr, undefined);
    assert.equal(parsed.explicit.size, 0);
  });

  void it('camelCases names', () => {
    assert.equal(camelCase('secure-port'), 'securePort');
    assert.equal(camelCase('cloud-provider-gce-l7lb-src-cidrs'), 'cloudProviderGceL7lbSrcCidrs');
    assert.equal(camelCase('v'), 'v');
  });
});

void describe('flags: forms', () => {
  void it('accepts --name=value and --name value', () => {
    assert.equal(parse(['--count=1']).o.count, 1);
    assert.equal(parse(['--count', '2']).o.count, 2);
    assert.equal(parse(['--name', '--x']).o.name, '--x');
    assert.equal(parse(['--wait', '-1s']).o.wait, -1000);
  });

  void it('accepts --bool, --bool=true|false but not --bool false', () => {
    assert.equal(parse(['--flag-bool']).o.flagBool, true);
    assert.equal(parse(['--flag-bool=true']).o.flagBool, true);
    assert.equal(parse(['--on-bool=false']).o.onBool, false);
    assert.equal(parse(['--on-bool=0']).o.onBool, false);
    throwsFlag(() => parse(['--on-bool', 'false']), 'unexpected argument "false": test-prog takes no positional arguments');
    throwsFlag(() => parse(['--on-bool=maybe']), 'invalid value "maybe" for --on-bool: must be true or false');
  });

  void it('accepts short forms -v=4, -v 4, -v4, -h', () => {
    assert.equal(parse(['-v=4']).o.verbosity, 4);
    assert.equal(parse(['-v', '5']).o.verbosity, 5);
    assert.equal(parse(['-v6']).o.verbosity, 6);
    assert.equal(parse(['-h']).o.help, true);
    assert.equal(parse(['-hv', '3']).o.verbosity, 3);
    throwsFlag(() => parse(['-x']), "unknown shorthand flag: 'x' in -x");
    throwsFlag(() => parse(['-count=1']), "unknown shorthand flag: 'c' in -count=1");
  });

  void it('accepts aliases and reports the spelling used', () => {
    const { o, parsed } = parse(['--old-count=7']);
    assert.equal(o.count, 7);
    assert.ok(parsed.explicit.has('count'));
    assert.equal(parsed.spelling.get('count'), '--old-count');
    throwsFlag(() => parse(['--old-count=x']), 'invalid value "x" for --old-count: must be an integer');
  });

  void it('stops at -- and refuses positional arguments', () => {
    throwsFlag(() => parse(['--', '--count=1']), 'unexpected argument "--count=1": test-prog takes no positional arguments');
    throwsFlag(() => parse(['extra']), /unexpected argument "extra"/);
    const parsed = parseFlags(['--count=1', '--', '--count=2'], SPECS, { allowPositional: true });
    assert.equal(parsed.values.count, 1);
    assert.deepEqual(parsed.args, ['--count=2']);
  });

  void it('refuses unknown flags and missing arguments', () => {
    throwsFlag(() => parse(['--foo']), 'unknown flag: --foo');
    throwsFlag(() => parse(['--foo=1']), 'unknown flag: --foo');
    throwsFlag(() => parse(['--count']), 'flag needs an argument: --count');
    throwsFlag(() => parse(['---count=1']), 'bad flag syntax: ---count=1');
  });

  void it('tracks explicit options in order of first use', () => {
    const { parsed } = parse(['--mode=none', '--count=1', '--mode=lease']);
    assert.deepEqual([...parsed.explicit], ['mode', 'count']);
  });

  void it('refuses later options only when given', () => {
    refuseLaterOptions(SPECS, parse([]).parsed);
    throwsFlag(() => refuseLaterOptions(SPECS, parse(['--future=x']).parsed), '--future: not implemented yet');
  });
});

void describe('flags: value types', () => {
  void it('int, int32, uint, float', () => {
    assert.equal(parse(['--count=-12']).o.count, -12);
    throwsFlag(() => parse(['--count=abc']), 'invalid value "abc" for --count: must be an integer');
    throwsFlag(() => parse(['--count=1.5']), 'invalid value "1.5" for --count: must be an integer');
    assert.equal(parse(['--small=2147483647']).o.small, 2147483647);
    throwsFlag(() => parse(['--small=2147483648']), 'invalid value "2147483648" for --small: must be a 32-bit integer');
    throwsFlag(() => parse(['--size=-1']), 'invalid value "-1" for --size: must be a non-negative integer');
    assert.equal(parse(['--ratio=0.001']).o.ratio, 0.001);
    assert.equal(parse(['--ratio=1e-3']).o.ratio, 0.001);
    throwsFlag(() => parse(['--ratio=x']), 'invalid value "x" for --ratio: must be a number');
    throwsFlag(() => parse(['--ratio=0.5']), 'invalid value "0.5" for --ratio: must be at most 0.02');
  });

  void it('strings: comma-separated, first use replaces the default, repeats append', () => {
    assert.deepEqual(parse(['--list=x,y']).o.list, ['x', 'y']);
    assert.deepEqual(parse(['--list=x', '--list=y,z']).o.list, ['x', 'y', 'z']);
    assert.deepEqual(parse(['--list=']).o.list, []);
    assert.deepEqual(parse(['--list="a,b",c']).o.list, ['a,b', 'c']);
    assert.deepEqual(parse(['--one-each=a,b', '--one-each=c']).o.oneEach, ['a,b', 'c']);
    assert.deepEqual(parse(['--picked=A,B']).o.picked, ['A', 'B']);
    throwsFlag(() => parse(['--picked=A,C']), 'invalid value "A,C" for --picked: "C" is not allowed; entries must be among A, B');
  });

  void it('duration', () => {
    assert.equal(parse(['--wait=1.5h']).o.wait, 5_400_000);
    throwsFlag(() => parse(['--wait=5']), /^invalid value "5" for --wait: must be a duration/);
  });

  void it('stringToString', () => {
    assert.deepEqual(parse(['--labels=a=b,c=d']).o.labels, { a: 'b', c: 'd' });
    assert.deepEqual(parse(['--labels=a=b', '--labels=c=d']).o.labels, { a: 'b', c: 'd' });
    // A single '=' makes the whole text one pair, commas included (metric,label=v1,v2).
    assert.deepEqual(parse(['--labels=m,l=v1,v2']).o.labels, { 'm,l': 'v1,v2' });
    throwsFlag(() => parse(['--labels=abc']), 'invalid value "abc" for --labels: must be formatted as key=value');
  });

  void it('mapStringString, with = or < separators', () => {
    assert.deepEqual(parse(['--map=x=1, y = 2']).o.map, { x: '1', y: '2' });
    assert.deepEqual(parse(['--map=x=1', '--map=y=2,x=3']).o.map, { x: '3', y: '2' });
    throwsFlag(() => parse(['--map=x']), 'invalid value "x" for --map: must be key=value pairs separated by commas');
    assert.deepEqual(parse(['--thresholds=memory.available<1Gi,nodefs.available<5%']).o.thresholds, {
      'memory.available': '1Gi',
      'nodefs.available': '5%',
    });
    throwsFlag(() => parse(['--thresholds=a=1']), 'invalid value "a=1" for --thresholds: must be key<value pairs separated by commas');
  });

  void it('keyValue: bare keys mean the empty value; noSplit keeps commas', () => {
    assert.deepEqual(parse(['--pairs=api/all=false,v1', '--pairs=apps/v1=true']).o.pairs, {
      'api/all': 'false',
      v1: '',
      'apps/v1': 'true',
    });
    assert.deepEqual(parse(['--claim=aud=a,b', '--claim=iss=x']).o.claim, { aud: 'a,b', iss: 'x' });
    throwsFlag(() => parse(['--pairs==x']), 'invalid value "=x" for --pairs: must be key=value pairs separated by commas');
  });

  void it('mapStringBool', () => {
    assert.deepEqual(parse(['--gates=A=true,B=false']).o.gates, { A: true, B: false });
    throwsFlag(() => parse(['--gates=A=yes']), 'invalid value "A=yes" for --gates: must be name=true|false pairs separated by commas');
  });

  void it('multimap', () => {
    assert.deepEqual(parse(['--headers=A:1,B:x:y', '--headers=A:2']).o.headers, { A: ['1', '2'], B: ['x:y'] });
    throwsFlag(() => parse(['--headers=A']), 'invalid value "A" for --headers: must be name:value pairs separated by commas');
  });

  void it('cidrs', () => {
    assert.deepEqual(parse(['--ranges=10.0.0.0/16,fd00::/64']).o.ranges, ['10.0.0.0/16', 'fd00::/64']);
    throwsFlag(() => parse(['--ranges=10.0.0.0/33']), /^invalid value "10.0.0.0\/33" for --ranges: "10.0.0.0\/33" is not a CIDR/);
    throwsFlag(() => parse(['--ranges=10.0.0.0']), /is not a CIDR/);
    assert.ok(isCIDR('::/0'));
    assert.ok(!isCIDR('fd00::/129'));
    assert.ok(!isCIDR('host/8'));
  });

  void it('portRange', () => {
    assert.deepEqual(parse(['--ports=1000-2000']).o.ports, { min: 1000, max: 2000 });
    assert.deepEqual(parse(['--ports=80']).o.ports, { min: 80, max: 80 });
    for (const bad of ['0-10', '10-5', '1-65536', 'a-b', '1-2-3']) {
      throwsFlag(() => parse([`--ports=${bad}`]), new RegExp(`^invalid value "${bad}" for --ports: must be a port range`));
    }
  });

  void it('enum', () => {
    assert.equal(parse(['--mode', 'none']).o.mode, 'none');
    throwsFlag(() => parse(['--mode=x']), 'invalid value "x" for --mode: must be one of master-count, lease, none');
  });

  void it('ip', () => {
    assert.equal(parse(['--addr=10.1.2.3']).o.addr, '10.1.2.3');
    assert.equal(parse(['--addr=::1']).o.addr, '::1');
    throwsFlag(() => parse(['--addr=10.1.2']), 'invalid value "10.1.2" for --addr: must be an IPv4 or IPv6 address');
  });
});

void describe('flags: Go durations', () => {
  void it('parses Go syntax into milliseconds', () => {
    const cases: [string, number][] = [
      ['0', 0],
      ['0s', 0],
      ['300ms', 300],
      ['1.5h', 5_400_000],
      ['2m0s', 120_000],
      ['-1s', -1000],
      ['+5s', 5000],
      ['1h2m3s', 3_723_000],
      ['1h0m0s', 3_600_000],
      ['.5s', 500],
      ['1.1s', 1100],
      ['1500us', 1.5],
      ['1500µs', 1.5],
      ['2000000ns', 2],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  });

  void it('refuses bad syntax', () => {
    for (const bad of ['', '5', 's', '1x', '1.2.3s', '--1s', 'h1', '1 s']) assert.throws(() => parseDuration(bad), FlagError, bad);
  });

  void it('formats the way Go prints durations', () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [100, '100ms'],
      [30_000, '30s'],
      [120_000, '2m0s'],
      [3_600_000, '1h0m0s'],
      [90_500, '1m30.5s'],
      [1.5, '1.5ms'],
      [0.0015, '1.5µs'],
      [0.000005, '5ns'],
      [-1000, '-1s'],
      [4 * 3_600_000, '4h0m0s'],
    ];
    for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
  });

  void it('round-trips', () => {
    for (const text of ['0s', '300ms', '1h30m0s', '2m0s', '1h0m0s', '-1s', '5m0s', '10.25s', '1.5ms', '4h0m0s', '100ms', '30s']) {
      assert.equal(formatDuration(parseDuration(text)), text);
    }
    for (const ms of [0, 1, 999, 1000, 61_000, 86_400_000, 123_456_789]) assert.equal(parseDuration(formatDuration(ms)), ms);
  });
});

void describe('flags: help', () => {
  const help = formatHelp('test-prog', 'A test program.', SPECS);
  const lines = help.split('\n');

  void it('starts with the description and usage', () => {
    assert.equal(lines[0], 'A test program.');
    assert.ok(help.includes('Usage:\n  test-prog [flags]'));
  });

  void it('groups options in table order', () => {
    const first = lines.indexOf('First group:');
    const second = lines.indexOf('Second group:');
    assert.ok(first > 0 && second > first);
    assert.ok(lines.findIndex((l) => l.includes('--wait')) < second);
    assert.ok(lines.findIndex((l) => l.includes('--labels')) > second);
  });

  void it('shows types and pflag-style defaults', () => {
    const line = (name: string) => lines.find((l) => l.startsWith(`      --${name} `) || l.startsWith(`      --${name}`)) ?? '';
    assert.match(line('count'), /^ {6}--count int +An int\. \(deprecated spelling: --old-count\) \(default 6443\)$/);
    assert.match(line('wait'), /--wait duration +A duration\. \(default 5m0s\)$/);
    assert.match(line('named'), /--named string +A string with a default\. \(default "x"\)$/);
    assert.match(line('list'), /--list strings +A list\. \(default \[a,b\]\)$/);
    assert.match(line('on-bool'), /--on-bool +A bool on by default\. \(default true\)$/);
    assert.match(line('flag-bool'), /--flag-bool +A bool\.$/);
    assert.match(line('ports'), /--ports portRange +Ports\. \(default 30000-32767\)$/);
    assert.match(line('thresholds'), /\(default mem<100Mi\)$/);
    assert.match(line('future'), /Not built yet\. \[not implemented yet\]$/);
    assert.ok(lines.some((l) => l.startsWith('  -v, --verbosity int')));
    assert.ok(lines.some((l) => l.startsWith('  -h, --help')));
  });

  void it('formats defaults', () => {
    const ratio = SPECS.find((s) => s.name === 'ratio');
    assert.ok(ratio);
    assert.equal(formatDefault(ratio), undefined);
    const mode = SPECS.find((s) => s.name === 'mode');
    assert.ok(mode);
    assert.equal(formatDefault(mode), '"lease"');
  });
});

void describe('flags: feature gates', () => {
  const table: FeatureGateSpec[] = [
    { name: 'AllAlpha', stage: 'alpha', default: false },
    { name: 'AllBeta', stage: 'beta', default: false },
    { name: 'A1', stage: 'alpha', default: false },
    { name: 'A2', stage: 'alpha', default: false },
    { name: 'B1', stage: 'beta', default: true },
    { name: 'B2', stage: 'beta', default: false },
    { name: 'OrchletThing', stage: 'beta', default: true, aliases: ['KubeletThing'] },
  ];

  void it('keeps defaults', () => {
    assert.deepEqual(resolveFeatureGates(table, {}), {
      AllAlpha: false,
      AllBeta: false,
      A1: false,
      A2: false,
      B1: true,
      B2: false,
      OrchletThing: true,
    });
  });

  void it('AllAlpha/AllBeta set every unset gate of their stage; explicit values win in any order', () => {
    const r = resolveFeatureGates(table, { A2: false, AllAlpha: true });
    assert.equal(r.A1, true);
    assert.equal(r.A2, false);
    assert.equal(r.B2, false);
    const b = resolveFeatureGates(table, { AllBeta: false, B2: true });
    assert.equal(b.B1, false);
    assert.equal(b.B2, true);
    assert.equal(b.OrchletThing, false);
    assert.equal(b.A1, false);
  });

  void it('accepts upstream spellings and refuses unknown gates', () => {
    assert.equal(resolveFeatureGates(table, { KubeletThing: false }).OrchletThing, false);
    assert.throws(() => resolveFeatureGates(table, { Nope: true }), /unrecognized feature gate Nope/);
    assert.equal(unknownFeatureGate(table, { A1: true }), undefined);
    assert.equal(unknownFeatureGate(table, { X: true }), 'unrecognized feature gate X');
  });

  void it('has the document-2 table with upstream provider names', () => {
    const byName = new Map(FEATURE_GATES.map((g) => [g.name, g]));
    assert.deepEqual(byName.get('CSIMigrationAWS'), { name: 'CSIMigrationAWS', stage: 'beta', default: true });
    assert.equal(byName.get('CSIMigrationAzureFile')?.default, false);
    assert.equal(byName.get('CSIMigrationPortworx')?.stage, 'alpha');
    assert.equal(byName.get('csiMigrationRBD')?.stage, 'alpha');
    assert.equal(byName.get('InTreePluginvSphereUnregister')?.stage, 'alpha');
    assert.deepEqual(byName.get('OrchletPodResources')?.aliases, ['KubeletPodResources']);
    assert.equal(new Set(FEATURE_GATES.map((g) => g.name)).size, FEATURE_GATES.length);
    const changed = changeFeatureGates(FEATURE_GATES, { CSIMigrationAWS: { stage: 'beta', default: false }, WinDSR: null });
    assert.equal(changed.find((g) => g.name === 'CSIMigrationAWS')?.default, false);
    assert.equal(changed.some((g) => g.name === 'WinDSR'), false);
  });
});
