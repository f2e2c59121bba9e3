// The agent's own manifest endpoint as a pod source (source 'push'): manifests submitted with
// PUT /manifests/{name} on the agent's server (a Pod or a PodList, YAML or JSON) are kept as files
// <root-dir>/manifests/<name>.yaml, so they survive a restart of the agent, and every change emits the
// pods of all stored manifests as one SET snapshot. DELETE /manifests/{name} removes one;
// GET /manifests lists them (a List of the submitted objects, each annotated with its name).
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYAML } from 'yaml';
import type { Json } from '../client/client.js';
import type { ManifestStore } from '../server/server.js';
import type { Pod } from '../types.js';
import type { PodSet } from './merge.js';
import { podsFromManifestText } from './manifest.js';

export const MANIFEST_NAME_ANNOTATION = 'orch.io/manifest-name';

export class PushSource implements ManifestStore {
  private readonly texts = new Map<string, string>();
  private readonly pods = new Map<string, Pod[]>();

  constructor(
    private readonly dir: string,
    private readonly nodeName: string,
    private readonly onSnapshot: (snapshot: PodSet) => void,
    private readonly onError: (name: string, err: Error) => void = () => {},
  ) {}

  /** Loads the stored manifests and emits the first snapshot. */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const f of (await readdir(this.dir)).sort()) {
      if (!f.endsWith('.yaml') || f.startsWith('.')) continue;
      const name = f.slice(0, -'.yaml'.length);
      const text = await readFile(join(this.dir, f), 'utf8');
      try {
        this.pods.set(name, this.decode(name, text));
        this.texts.set(name, text);
      } catch (err) {
        this.onError(name, err instanceof Error ? err : new Error(String(err)));
      }
    }
    this.emit();
  }

  list(): Json {
    const items = [...this.texts].map(([name, text]) => {
      const obj = parseYAML(text) as Json;
      const meta = (obj.metadata ?? {}) as Json;
      return { ...obj, metadata: { ...meta, annotations: { ...((meta.annotations as Json | undefined) ?? {}), [MANIFEST_NAME_ANNOTATION]: name } } };
    });
    return { kind: 'List', apiVersion: 'v1', metadata: {}, items };
  }

  async put(name: string, text: string): Promise<{ created: boolean }> {
    const pods = this.decode(name, text);
    if (pods.length === 0) throw new Error('the manifest holds no pod');
    const created = !this.texts.has(name);
    const path = join(this.dir, `${name}.yaml`);
    await writeFile(`${path}.tmp`, text, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
    this.texts.set(name, text);
    this.pods.set(name, pods);
    this.emit();
    return { created };
  }

  async delete(name: string): Promise<boolean> {
    if (!this.texts.has(name)) return false;
    await rm(join(this.dir, `${name}.yaml`), { force: true });
    this.texts.delete(name);
    this.pods.delete(name);
    this.emit();
    return true;
  }

  private decode(name: string, text: string): Pod[] {
    return podsFromManifestText(text, 'push', this.nodeName, `orchlet-manifest:${name}`);
  }

  private emit(): void {
    this.onSnapshot({ op: 'SET', source: 'push', pods: [...this.pods.values()].flat() });
  }
}
