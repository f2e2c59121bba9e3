/**
 * Pod Security policies: what a namespace's pod-security.kubernetes.io labels ask for (enforce, audit and
 * warn, each a level and a version), and the plugin's PodSecurityConfiguration (defaults for unlabelled
 * namespaces, and exemptions), as Kubernetes 1.23's pod-security-admission api package reads them.
 */
import { notSupported, invalid, root, type FieldError } from '../../../util/validation.js';
import { LATEST, type Level, type Version } from './checks.js';

export const LABEL_PREFIX = 'pod-security.kubernetes.io/';
export const MODES = ['enforce', 'audit', 'warn'] as const;
export type Mode = (typeof MODES)[number];
export const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];

/** A level at a version; `latest` true when the version is "latest" (printed so). */
export interface LevelVersion {
  level: Level;
  version: Version;
  latest: boolean;
}

export type Policy = Record<Mode, LevelVersion>;

/** Kubernetes' LevelVersion.String(): `restricted:latest`, `baseline:v1.22`. */
export function policyString(lv: LevelVersion): string {
  return `${lv.level}:${lv.latest ? 'latest' : `v${lv.version[0]}.${lv.version[1]}`}`;
}

const VERSION_RE = /^v1\.(0|[1-9][0-9]*)$/;

/** A version label's value: "latest" or v1.<minor>; versions newer than this table are evaluated as latest. */
export function parseVersion(text: string): { version: Version; latest: boolean } | undefined {
  if (text === 'latest') return { version: LATEST, latest: true };
  const m = VERSION_RE.exec(text);
  if (!m) return undefined;
  const minor = Number(m[1]);
  return minor > LATEST[1] ? { version: LATEST, latest: false } : { version: [1, minor], latest: false };
}

const isLevel = (s: string): s is Level => (LEVELS as readonly string[]).includes(s);

/** The defaults of every mode when nothing configures them: privileged at latest. */
export const PRIVILEGED_POLICY: Policy = {
  enforce: { level: 'privileged', version: LATEST, latest: true },
  audit: { level: 'privileged', version: LATEST, latest: true },
  warn: { level: 'privileged', version: LATEST, latest: true },
};

/**
 * The policy the labels ask for over `defaults` (Kubernetes' PolicyToEvaluate). A bad level is evaluated as
 * restricted and a bad version as latest, and each is reported as a field error of metadata.labels.
 */
export function policyFromLabels(labels: Readonly<Record<string, string>>, defaults: Policy): { policy: Policy; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const policy = { ...defaults };
  const path = root('metadata', 'labels');
  for (const mode of MODES) {
    const def = defaults[mode];
    let level = def.level;
    let version: Version = def.version;
    let latest = def.latest;
    const levelText = labels[LABEL_PREFIX + mode];
    if (levelText !== undefined) {
      if (isLevel(levelText)) {
        level = levelText;
      } else {
        errors.push(notSupported(path.key(LABEL_PREFIX + mode), levelText, LEVELS));
        level = 'restricted';
      }
    }
    const versionText = labels[`${LABEL_PREFIX}${mode}-version`];
    if (versionText !== undefined) {
      const parsed = parseVersion(versionText);
      if (parsed) {
        version = parsed.version;
        latest = parsed.latest;
      } else {
        errors.push(invalid(path.key(`${LABEL_PREFIX}${mode}-version`), versionText, "must be 'latest' or 'v1.x'"));
        version = LATEST;
        latest = true;
      }
    }
    policy[mode] = { level, version, latest };
  }
  return { policy, errors };
}

/** The plugin's configuration: defaults and exemptions. */
export interface PodSecurityConfig {
  defaults: Policy;
  exemptions: { usernames: string[]; namespaces: string[]; runtimeClasses: string[] };
}

export const DEFAULT_CONFIG: PodSecurityConfig = { defaults: PRIVILEGED_POLICY, exemptions: { usernames: [], namespaces: [], runtimeClasses: [] } };

const CONFIG_GROUP = 'pod-security.admission.config.k8s.io';
const CONFIG_VERSIONS = ['v1alpha1', 'v1beta1'];

const stringList = (v: unknown, field: string, problems: string[]): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
    problems.push(`${field}: must be a list of strings`);
    return [];
  }
  return v as string[];
};

/**
 * Reads a PodSecurityConfiguration (v1alpha1 or v1beta1): its defaults (each mode's level and version,
 * privileged and latest when absent) and exemptions. Throws an Error naming every problem.
 */
export function parsePodSecurityConfig(object: unknown, source: string): PodSecurityConfig {
  const o = (typeof object === 'object' && object !== null ? object : {}) as Record<string, unknown>;
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  const kind = typeof o['kind'] === 'string' ? o['kind'] : '';
  if (kind !== 'PodSecurityConfiguration' || !CONFIG_VERSIONS.map((v) => `${CONFIG_GROUP}/${v}`).includes(apiVersion)) {
    throw new Error(
      `${source}: expected kind PodSecurityConfiguration of ${CONFIG_VERSIONS.map((v) => `${CONFIG_GROUP}/${v}`).join(' or ')}, got ${kind} ${apiVersion}`,
    );
  }
  const problems: string[] = [];
  const d = (typeof o['defaults'] === 'object' && o['defaults'] !== null ? o['defaults'] : {}) as Record<string, unknown>;
  const defaults = { ...PRIVILEGED_POLICY };
  for (const mode of MODES) {
    const levelText = d[mode] ?? 'privileged';
    const versionText = d[`${mode}-version`] ?? 'latest';
    if (typeof levelText !== 'string' || !isLevel(levelText)) {
      problems.push(`defaults.${mode}: Unsupported value: ${JSON.stringify(levelText)}: supported values: "privileged", "baseline", "restricted"`);
      continue;
    }
    const parsed = typeof versionText === 'string' ? parseVersion(versionText) : undefined;
    if (!parsed) {
      problems.push(`defaults.${mode}-version: Invalid value: ${JSON.stringify(versionText)}: must be 'latest' or 'v1.x'`);
      continue;
    }
    defaults[mode] = { level: levelText, ...parsed };
  }
  const e = (typeof o['exemptions'] === 'object' && o['exemptions'] !== null ? o['exemptions'] : {}) as Record<string, unknown>;
  const exemptions = {
    usernames: stringList(e['usernames'], 'exemptions.usernames', problems),
    namespaces: stringList(e['namespaces'], 'exemptions.namespaces', problems),
    runtimeClasses: stringList(e['runtimeClasses'], 'exemptions.runtimeClasses', problems),
  };
  if (problems.length > 0) throw new Error(`${source}: invalid PodSecurityConfiguration: ${problems.join('; ')}`);
  return { defaults, exemptions };
}
