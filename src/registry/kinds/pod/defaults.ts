/**
 * Pod defaulting as Kubernetes 1.23's v1 defaulting functions do it (pkg/apis/core/v1/defaults.go and the
 * generated zz_generated.defaults.go): SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container (and for
 * ephemeral containers), ports, probes, HTTP get actions, field selectors and volume sources; and the v1 ↔
 * internal round trip of status.podIP/podIPs. Not here: what admission plugins add (service account token
 * volumes, DefaultTolerationSeconds' tolerations), which are not part of the API's defaulting.
 *
 * Every function mutates the JSON object it is given and tolerates any shape (validation reports bad ones).
 */
type Json = Record<string, any>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** 0644, the default mode of secret, configMap, downwardAPI and projected volumes. */
export const DEFAULT_VOLUME_MODE = 0o644;

export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';
export const TERMINATION_MESSAGE_PATH_DEFAULT = '/dev/termination-log';

/** The tag of an image reference as docker's reference parser finds it: '' for a digest, 'latest' for none. */
export function imageTag(image: string): string {
  const at = image.indexOf('@');
  const named = at >= 0 ? image.slice(0, at) : image;
  const slash = named.lastIndexOf('/');
  const colon = named.lastIndexOf(':');
  const tag = colon > slash ? named.slice(colon + 1) : '';
  if (tag === '' && at < 0) return 'latest';
  return tag;
}

/** SetDefaults_Pod + SetDefaults_PodSpec and everything below them. */
export function defaultPod(obj: Json): void {
  const spec = isObject(obj['spec']) ? obj['spec'] : (obj['spec'] = {});
  defaultPodSpec(spec);
  // SetDefaults_Pod: requests default to limits, for containers and init containers.
  for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) defaultRequestsFromLimits(c);
  if (spec['enableServiceLinks'] === undefined || spec['enableServiceLinks'] === null) spec['enableServiceLinks'] = true;
  if (isObject(obj['status'])) defaultPodIPs(obj['status']);
}

function defaultRequestsFromLimits(c: Json): void {
  const res = isObject(c['resources']) ? c['resources'] : undefined;
  if (!res || !isObject(res['limits'])) return;
  const requests = isObject(res['requests']) ? res['requests'] : (res['requests'] = {});
  for (const [k, v] of Object.entries(res['limits'])) if (!(k in requests)) requests[k] = v;
}

/** SetDefaults_PodSpec and the defaults of its parts. */
export function defaultPodSpec(spec: Json): void {
  if (!spec['dnsPolicy']) spec['dnsPolicy'] = 'ClusterFirst';
  if (!spec['restartPolicy']) spec['restartPolicy'] = 'Always';
  if (spec['hostNetwork'] === true) {
    for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) {
      for (const p of objects(c['ports'])) if (!p['hostPort']) p['hostPort'] = p['containerPort'];
    }
  }
  if (!isObject(spec['securityContext'])) spec['securityContext'] = {};
  if (spec['terminationGracePeriodSeconds'] === undefined || spec['terminationGracePeriodSeconds'] === null) {
    spec['terminationGracePeriodSeconds'] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  }
  if (!spec['schedulerName']) spec['schedulerName'] = DEFAULT_SCHEDULER_NAME;
  for (const c of objects(spec['containers'])) defaultContainer(c);
  for (const c of objects(spec['initContainers'])) defaultContainer(c);
  for (const c of objects(spec['ephemeralContainers'])) defaultContainer(c);
  for (const v of objects(spec['volumes'])) defaultVolume(v);
}

/** SetDefaults_Container and the defaults of its ports, env, probes and lifecycle handlers. */
export function defaultContainer(c: Json): void {
  if (!c['imagePullPolicy']) c['imagePullPolicy'] = imageTag(typeof c['image'] === 'string' ? c['image'] : '') === 'latest' ? 'Always' : 'IfNotPresent';
  if (!c['terminationMessagePath']) c['terminationMessagePath'] = TERMINATION_MESSAGE_PATH_DEFAULT;
  if (!c['terminationMessagePolicy']) c['terminationMessagePolicy'] = 'File';
  for (const p of objects(c['ports'])) if (!p['protocol']) p['protocol'] = 'TCP';
  for (const e of objects(c['env'])) {
    const from = isObject(e['valueFrom']) ? e['valueFrom'] : undefined;
    if (from && isObject(from['fieldRef']) && !from['fieldRef']['apiVersion']) from['fieldRef']['apiVersion'] = 'v1';
  }
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) if (isObject(c[probe])) defaultProbe(c[probe]);
  if (isObject(c['lifecycle'])) {
    for (const h of ['postStart', 'preStop']) {
      const handler = c['lifecycle'][h];
      if (isObject(handler) && isObject(handler['httpGet'])) defaultHTTPGet(handler['httpGet']);
    }
  }
}

function defaultProbe(p: Json): void {
  if (!p['timeoutSeconds']) p['timeoutSeconds'] = 1;
  if (!p['periodSeconds']) p['periodSeconds'] = 10;
  if (!p['successThreshold']) p['successThreshold'] = 1;
  if (!p['failureThreshold']) p['failureThreshold'] = 3;
  if (isObject(p['httpGet'])) defaultHTTPGet(p['httpGet']);
}

function defaultHTTPGet(h: Json): void {
  if (!h['path']) h['path'] = '/';
  if (!h['scheme']) h['scheme'] = 'HTTP';
}

const VOLUME_SOURCES = [
  'hostPath', 'emptyDir', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'secret', 'nfs', 'iscsi', 'glusterfs',
  'persistentVolumeClaim', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'downwardAPI', 'fc', 'azureFile', 'configMap',
  'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'projected', 'portworxVolume', 'scaleIO', 'storageos', 'csi',
  'ephemeral',
] as const;

export const VOLUME_SOURCE_NAMES: readonly string[] = VOLUME_SOURCES;

/** SetDefaults_Volume (no source: an emptyDir) and the sources' own defaults. */
function defaultVolume(v: Json): void {
  if (!VOLUME_SOURCES.some((k) => v[k] !== undefined && v[k] !== null)) v['emptyDir'] = {};
  const modeDefault = (src: unknown) => {
    if (isObject(src) && (src['defaultMode'] === undefined || src['defaultMode'] === null)) src['defaultMode'] = DEFAULT_VOLUME_MODE;
  };
  modeDefault(v['secret']);
  modeDefault(v['configMap']);
  modeDefault(v['downwardAPI']);
  modeDefault(v['projected']);
  if (isObject(v['hostPath']) && v['hostPath']['type'] === undefined) v['hostPath']['type'] = '';
  if (isObject(v['iscsi']) && !v['iscsi']['iscsiInterface']) v['iscsi']['iscsiInterface'] = 'default';
  if (isObject(v['azureDisk'])) {
    const d = v['azureDisk'];
    d['cachingMode'] ??= 'ReadWrite';
    d['kind'] ??= 'Shared';
    d['fsType'] ??= 'ext4';
    d['readOnly'] ??= false;
  }
  if (isObject(v['rbd'])) {
    const r = v['rbd'];
    if (!r['pool']) r['pool'] = 'rbd';
    if (!r['user']) r['user'] = 'admin';
    if (!r['keyring']) r['keyring'] = '/etc/ceph/keyring';
  }
  if (isObject(v['scaleIO'])) {
    const s = v['scaleIO'];
    if (!s['storageMode']) s['storageMode'] = 'ThinProvisioned';
    if (!s['fsType']) s['fsType'] = 'xfs';
  }
  for (const file of objects(isObject(v['downwardAPI']) ? v['downwardAPI']['items'] : undefined)) defaultDownwardFile(file);
  if (isObject(v['projected'])) {
    for (const src of objects(v['projected']['sources'])) {
      if (isObject(src['serviceAccountToken']) && !src['serviceAccountToken']['expirationSeconds']) {
        src['serviceAccountToken']['expirationSeconds'] = 3600;
      }
      if (isObject(src['downwardAPI'])) for (const file of objects(src['downwardAPI']['items'])) defaultDownwardFile(file);
    }
  }
  const template = isObject(v['ephemeral']) && isObject(v['ephemeral']['volumeClaimTemplate']) ? v['ephemeral']['volumeClaimTemplate'] : undefined;
  if (template && isObject(template['spec']) && !template['spec']['volumeMode']) template['spec']['volumeMode'] = 'Filesystem';
}

function defaultDownwardFile(file: Json): void {
  if (isObject(file['fieldRef']) && !file['fieldRef']['apiVersion']) file['fieldRef']['apiVersion'] = 'v1';
}

/**
 * The v1 → internal → v1 round trip of the pod's IPs: a lone podIP fills podIPs, and podIP is podIPs[0].
 */
export function defaultPodIPs(status: Json): void {
  const ips = objects(status['podIPs']);
  if (typeof status['podIP'] === 'string' && status['podIP'] !== '' && ips.length === 0) status['podIPs'] = [{ ip: status['podIP'] }];
  else if (ips.length > 0 && typeof ips[0]!['ip'] === 'string') status['podIP'] = ips[0]!['ip'];
}
