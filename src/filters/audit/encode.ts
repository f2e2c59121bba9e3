/**
 * Event serializations, byte for byte as kube-apiserver writes them: JSON of audit.k8s.io/v1 or v1beta1
 * (Go's field order and omitempty, MicroTime in UTC with six decimals, HTML characters escaped as Go's
 * encoding/json does), the EventList a webhook receives, and the one-line legacy format (EventString).
 */
import type { UserInfo } from '../../endpoints/http.js';
import { goQuote } from '../../util/validation.js';
import { AUDIT_GROUP, type AuditEvent, type EventVersion, type ObjectReference, type ResponseStatus } from './types.js';

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

function pad6(n: number): string {
  return n >= 100_000 ? String(n) : String(n).padStart(6, '0');
}

/** The last whole second microTime formatted, and its text up to the fraction: a pure memo, events come in order. */
let memoSecond = NaN;
let memoPrefix = '';

/** metav1.MicroTime: RFC 3339 in UTC with exactly six decimals. */
export function microTime(us: number): string {
  const second = Math.floor(us / 1_000_000);
  if (second !== memoSecond) {
    const d = new Date(second * 1000);
    memoPrefix = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.`;
    memoSecond = second;
  }
  return `${memoPrefix}${pad6(us - second * 1_000_000)}Z`;
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
  let out = '';
  if (u.name) out += `,"username":${JSON.stringify(u.name)}`;
  if (u.uid) out += `,"uid":${JSON.stringify(u.uid)}`;
  if (u.groups.length > 0) out += `,"groups":${JSON.stringify(u.groups)}`;
  if (u.extra && Object.keys(u.extra).length > 0) out += `,"extra":${JSON.stringify(u.extra)}`;
  return `{${out.slice(1)}}`;
}

function objectRefJSON(ref: ObjectReference): string {
  let out = '';
  if (ref.resource) out += `,"resource":${JSON.stringify(ref.resource)}`;
  if (ref.namespace) out += `,"namespace":${JSON.stringify(ref.namespace)}`;
  if (ref.name) out += `,"name":${JSON.stringify(ref.name)}`;
  if (ref.uid) out += `,"uid":${JSON.stringify(ref.uid)}`;
  if (ref.apiGroup) out += `,"apiGroup":${JSON.stringify(ref.apiGroup)}`;
  if (ref.apiVersion) out += `,"apiVersion":${JSON.stringify(ref.apiVersion)}`;
  if (ref.resourceVersion) out += `,"resourceVersion":${JSON.stringify(ref.resourceVersion)}`;
  if (ref.subresource) out += `,"subresource":${JSON.stringify(ref.subresource)}`;
  return `{${out.slice(1)}}`;
}

function statusJSON(s: ResponseStatus): string {
  let out = '{"metadata":{}';
  if (s.status) out += `,"status":${JSON.stringify(s.status)}`;
  if (s.message) out += `,"message":${JSON.stringify(s.message)}`;
  if (s.reason) out += `,"reason":${JSON.stringify(s.reason)}`;
  if (s.details !== undefined && s.details !== null) out += `,"details":${JSON.stringify(s.details)}`;
  if (s.code) out += `,"code":${s.code}`;
  return out + '}';
}

function annotationsJSON(a: Record<string, string>): string {
  // Go marshals maps with sorted keys.
  const keys = Object.keys(a);
  if (keys.length > 1) keys.sort();
  let out = '';
  for (const k of keys) out += `,${JSON.stringify(k)}:${JSON.stringify(a[k])}`;
  return `{${out.slice(1)}}`;
}

const TYPE_META: Record<EventVersion, string> = {
  v1: `{"kind":"Event","apiVersion":"${AUDIT_GROUP}/v1",`,
  v1beta1: `{"kind":"Event","apiVersion":"${AUDIT_GROUP}/v1beta1",`,
};

/**
 * The event's JSON. `typeMeta` adds kind and apiVersion (a single event; items of an EventList have none).
 * The text is kept with the event (backends, truncation and size checks ask for the same text), and the
 * fields that stay the same through a request's stages are encoded once per request.
 */
export function eventJSON(ev: AuditEvent, version: EventVersion, typeMeta: boolean): string {
  let json = ev.encodedFor === ev && ev.encodedVersion === version ? ev.encoded : undefined;
  if (json === undefined) {
    json = buildEventJSON(ev, version);
    ev.encoded = json;
    ev.encodedVersion = version;
    ev.encodedFor = ev;
  }
  return typeMeta ? json : '{' + json.slice(TYPE_META[version].length);
}

/** The event's JSON with kind and apiVersion, with Go's escaping. */
function buildEventJSON(ev: AuditEvent, version: EventVersion): string {
  const memo = ev.memo;
  let head = memo?.head;
  if (head === undefined) {
    head = goJSONEscape(`"requestURI":${JSON.stringify(ev.requestURI)},"verb":${JSON.stringify(ev.verb)},"user":${userJSON(ev.user)}`);
    if (memo) memo.head = head;
  }
  let client = memo?.client;
  if (client === undefined) {
    client = '';
    if (ev.sourceIPs.length > 0) client += `,"sourceIPs":${JSON.stringify(ev.sourceIPs)}`;
    if (ev.userAgent) client += `,"userAgent":${JSON.stringify(ev.userAgent)}`;
    client = goJSONEscape(client);
    if (memo) memo.client = client;
  }
  let out = TYPE_META[version];
  if (version === 'v1beta1') out += `"metadata":{"creationTimestamp":"${metaTime(ev.stageTimestamp)}"},`;
  out += `"level":"${ev.level}",`;
  if (version === 'v1beta1') out += `"timestamp":"${metaTime(ev.requestReceivedTimestamp)}",`;
  out += `"auditID":${goJSONEscape(JSON.stringify(ev.auditID))},"stage":"${ev.stage}",${head}`;
  let changing = '';
  if (ev.impersonatedUser) changing += `,"impersonatedUser":${userJSON(ev.impersonatedUser)}`;
  out += goJSONEscape(changing) + client;
  changing = '';
  if (ev.objectRef) changing += `,"objectRef":${objectRefJSON(ev.objectRef)}`;
  if (ev.responseStatus) changing += `,"responseStatus":${statusJSON(ev.responseStatus)}`;
  out += goJSONEscape(changing);
  if (ev.requestObject !== undefined) out += `,"requestObject":${goJSONEscape(ev.requestObject)}`;
  if (ev.responseObject !== undefined) out += `,"responseObject":${goJSONEscape(ev.responseObject)}`;
  out += `,"requestReceivedTimestamp":"${microTime(ev.requestReceivedTimestamp)}","stageTimestamp":"${microTime(ev.stageTimestamp)}"`;
  if (ev.annotations) {
    for (const _ in ev.annotations) {
      out += `,"annotations":${goJSONEscape(annotationsJSON(ev.annotations))}`;
      break;
    }
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
