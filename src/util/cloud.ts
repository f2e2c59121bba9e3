// The cloud options shared by orch-apiserver and orchlet (--cloud-provider, --cloud-config,
// --azure-container-registry-config). orch has no in-tree cloud providers: as Kubernetes does with
// DisableCloudProviders, an empty provider means none and 'external' means an external cloud
// controller manager does the cloud work; any other name is refused. A configuration file that is
// named is read and checked at start, as kube-apiserver reads --cloud-config for its admission
// plugins, so a wrong path or a broken file is reported before the program runs.
import { readFileSync } from 'node:fs';
import { yaml } from './yaml.js';
import { FlagError } from './flags.js';

export interface CloudOptions {
  cloudProvider?: string | undefined;
  cloudConfig?: string | undefined;
  azureContainerRegistryConfig?: string | undefined;
}

/** The provider names accepted: none, or an external cloud controller manager. */
export const ACCEPTED_CLOUD_PROVIDERS: readonly string[] = ['', 'external'];

function readOption(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new FlagError(`--${flag}: couldn't read ${path}: ${(e as Error).message}`, flag);
  }
}

/**
 * The problem with a cloud-config text, or undefined: the files are INI files (gcfg) of
 * '[Section]' or '[Section "name"]' headings and 'key = value' (or bare 'key') lines, with '#' and
 * ';' comments; a key before any section is an error, as gcfg reports it.
 */
export function checkCloudConfigText(text: string): string | undefined {
  let inSection = false;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      if (!/^\[\s*[A-Za-z][-.A-Za-z0-9]*(\s+"([^"\\]|\\.)*")?\s*\]\s*([#;].*)?$/.test(line)) {
        return `line ${i + 1}: invalid section heading ${JSON.stringify(line)}`;
      }
      inSection = true;
      continue;
    }
    if (!/^[A-Za-z][-A-Za-z0-9]*\s*(=.*)?$/.test(line)) return `line ${i + 1}: invalid line ${JSON.stringify(line)}`;
    if (!inSection) return `line ${i + 1}: variable outside of a section`;
  }
  return undefined;
}

/**
 * Checks the cloud options; throws FlagError naming the option when the provider is an in-tree one
 * or another name, or when a named file can't be read or is not valid.
 */
export function checkCloudOptions(o: CloudOptions): void {
  const provider = o.cloudProvider ?? '';
  if (!ACCEPTED_CLOUD_PROVIDERS.includes(provider)) {
    throw new FlagError(
      `--cloud-provider: cloud provider ${JSON.stringify(provider)} is not supported: orch has no in-tree cloud providers; ` +
        'leave it empty, or set --cloud-provider=external and run an external cloud controller manager',
      'cloud-provider',
    );
  }
  if (o.cloudConfig) {
    const problem = checkCloudConfigText(readOption(o.cloudConfig, 'cloud-config'));
    if (problem) throw new FlagError(`--cloud-config: ${o.cloudConfig}: ${problem}`, 'cloud-config');
  }
  if (o.azureContainerRegistryConfig) {
    const path = o.azureContainerRegistryConfig;
    const text = readOption(path, 'azure-container-registry-config');
    let doc: unknown;
    try {
      doc = text.trim() === '' ? {} : yaml().parse(text);
    } catch (e) {
      throw new FlagError(`--azure-container-registry-config: ${path}: ${(e as Error).message.split('\n')[0]}`, 'azure-container-registry-config');
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      throw new FlagError(`--azure-container-registry-config: ${path}: the file must hold a JSON or YAML object`, 'azure-container-registry-config');
    }
  }
}
