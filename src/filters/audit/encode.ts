/**
 * Event serializations, byte for byte as kube-apiserver writes them: JSON of audit.k8s.io/v1 or v1beta1
 * (Go's field order and omitempty, MicroTime in UTC with six decimals, HTML characters escaped as Go's
 * encoding/json does), the EventList a webhook receives, and the one-line legacy format (EventString).
 */
import type { UserInfo } from '../../endpoints/http.js';
import { goQuote } from '../../util/validation.js';
import { AUDIT_GROUP, type AuditEvent, type EventVersion, type ResponseStatus } from './types.js';

const HTML_CHARS = /[<>&\u2028\u2029]/g;
const HAS_HTML_CHARS = /[<>&\u2028\u2029]/;
const HTML_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** Go's encoding/json escapes <, > and & (and U+2028/9) in strings; in JSON text they occur only there. */
export function goJSONEscape(json: string): string {
  return HAS_HTML_CHARS.test(json) ? json.replace(HTML_CHARS, (c) => HTML_ESCAPES[c]!) : json;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** metav1.MicroTime: RFC 3339 in UTC with exactly six decimals. */
export function microTime(us: number): string {
  const d = new Date(Math.floor(us / 1000));
  const micros = ((us % 1_000_000) + 1_000_000) % 1_000_000;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)}Z`;
}

/** metav1.Time: RFC 3339 in UTC, whole seconds. */
export function metaTime(us: number): string {
  return microTime(us).replace(/\.\d{6}Z$/, 'Z');
}

/** Go's time.Format(RFC3339Nano) in the local zone: trailing zeros of the fraction dropped, 'Z' at offset 0. */
export function rfc3339NanoLocal(us: number): string {
  const d = new Date(Math.floor(us / 1000));
  const micros = ((us % 1_000_000) + 1_000_000) % 1_000_000;
  const frac = micros === 0 ? '' : '.' + pad(micros, 6).replace(/0+$/, '');
  const off = -d.getTimezoneOffset();
  const zone = off === 0 ? 'Z' : `${off > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${frac}${zone}`;
}

/** authentication/v1 UserInfo with omitempty fields. */
function userJSON(u: UserInfo | undefined): string {
  if (!u) return '{}';
  const parts: string[] = [];
  if (u.name) parts.push(`"username":${JSON.stringify(u.name)}`);
  if (u.uid) parts.push(`"uid":${JSON.stringify(u.uid)}`);
  if (u.groups.length > 0) parts.push(`"groups":${JSON.stringify(u.groups)}`);
  if (u.extra && Object.keys(u.extra).length > 0) parts.push(`"extra":${JSON.stringify(u.extra)}`);
  return `{${parts.join(',')}}`;
}

const OBJECT_REF_FIELDS = ['resource', 'namespace', 'name', 'uid', 'apiGroup', 'apiVersion', 'resourceVersion', 'subresource'] as const;

function statusJSON(s: ResponseStatus): string {
  let out = '{"metadata":{}';
  if (s.status) out += `,"status":${JSON.stringify(s.status)}`;
  if (s.message) out += `,"message":${JSON.stringify(s.message)}`;
  if (s.reason) out += `,"reason":${JSON.stringify(s.reason)}`;
  if (s.details !== undefined && s.details !== null) out += `,"details":${JSON.stringify(s.details)}`;
  if (s.code) out += `,"code":${s.code}`;
  return out + '}';
}

/**
 * The event's JSON. `typeMeta` adds kind and apiVersion (a single event; items of an EventList have none).
 * Results are cached per event, since backends, truncation and size checks ask for the same text.
 */
export function eventJSON(ev: AuditEvent, version: EventVersion, typeMeta: boolean): string {
  const key = `${version}${typeMeta ? '+' : '-'}`;
  let cache = CACHE.get(ev);
  const hit = cache?.get(key);
  if (hit !== undefined) return hit;
  const text = goJSONEscape(buildEventJSON(ev, version, typeMeta));
  if (!cache) CACHE.set(ev, (cache = new Map()));
  cache.set(key, text);
  return text;
}

const CACHE = new WeakMap<AuditEvent, Map<string, string>>();

function buildEventJSON(ev: AuditEvent, version: EventVersion, typeMeta: boolean): string {
  let out = '{';
  if (typeMeta) out += `"kind":"Event","apiVersion":"${AUDIT_GROUP}/${version}",`;
  if (version === 'v1beta1') out += `"metadata":{"creationTimestamp":"${metaTime(ev.stageTimestamp)}"},`;
  out += `"level":"${ev.level}",`;
  if (version === 'v1beta1') out += `"timestamp":"${metaTime(ev.requestReceivedTimestamp)}",`;
  out += `"auditID":${JSON.stringify(ev.auditID)},"stage":"${ev.stage}",`;
  out += `"requestURI":${JSON.stringify(ev.requestURI)},"verb":${JSON.stringify(ev.verb)},"user":${userJSON(ev.user)}`;
  if (ev.impersonatedUser) out += `,"impersonatedUser":${userJSON(ev.impersonatedUser)}`;
  if (ev.sourceIPs.length > 0) out += `,"sourceIPs":${JSON.stringify(ev.sourceIPs)}`;
  if (ev.userAgent) out += `,"userAgent":${JSON.stringify(ev.userAgent)}`;
  if (ev.objectRef) {
    const ref = ev.objectRef;
    const fields = OBJECT_REF_FIELDS.filter((f) => ref[f]).map((f) => `"${f}":${JSON.stringify(ref[f])}`);
    out += `,"objectRef":{${fields.join(',')}}`;
  }
  if (ev.responseStatus) out += `,"responseStatus":${statusJSON(ev.responseStatus)}`;
  if (ev.requestObject !== undefined) out += `,"requestObject":${ev.requestObject}`;
  if (ev.responseObject !== undefined) out += `,"responseObject":${ev.responseObject}`;
  out += `,"requestReceivedTimestamp":"${microTime(ev.requestReceivedTimestamp)}","stageTimestamp":"${microTime(ev.stageTimestamp)}"`;
  if (ev.annotations && Object.keys(ev.annotations).length > 0) {
    // Go marshals maps with sorted keys.
    const keys = Object.keys(ev.annotations).sort();
    out += `,"annotations":{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(ev.annotations![k])}`).join(',')}}`;
  }
  return out + '}';
}

/** The body of a webhook POST: an EventList of the given events. */
export function eventListJSON(events: readonly AuditEvent[], version: EventVersion): string {
  const items = events.map((e) => eventJSON(e, version, false)).join(',');
  return `{"kind":"EventList","apiVersion":"${AUDIT_GROUP}/${version}","metadata":{},"items":[${items}]}`;
}

function quotedList(list: readonly string[]): string {
  return list.map((s) => goQuote(s)).join(',');
}

/** Kubernetes' EventString: the legacy log format, one line per event (without the newline). */
export function eventString(ev: AuditEvent): string {
  let username = '<none>';
  let groups = '<none>';
  if (ev.user?.name) {
    username = ev.user.name;
    if (ev.user.groups.length > 0) groups = quotedList(ev.user.groups);
  }
  let asuser = '<self>';
  let asgroups = '<lookup>';
  if (ev.impersonatedUser) {
    asuser = ev.impersonatedUser.name;
    asgroups = quotedList(ev.impersonatedUser.groups);
  }
  const namespace = ev.objectRef?.namespace || '<none>';
  const response = ev.responseStatus ? String(ev.responseStatus.code ?? 0) : '<deferred>';
  const ip = ev.sourceIPs[0] ?? '<unknown>';
  return (
    `${rfc3339NanoLocal(ev.requestReceivedTimestamp)} AUDIT: id=${goQuote(ev.auditID)} stage=${goQuote(ev.stage)} ip=${goQuote(ip)} ` +
    `method=${goQuote(ev.verb)} user=${goQuote(username)} groups=${goQuote(groups)} as=${goQuote(asuser)} asgroups=${goQuote(asgroups)} ` +
    `user-agent=${goQuote(ev.userAgent)} namespace=${goQuote(namespace)} uri=${goQuote(ev.requestURI)} response="${response}"`
  );
}
