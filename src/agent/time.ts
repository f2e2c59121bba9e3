// Time formats of the node agent.

/**
 * RFC 3339 with nanoseconds as Go's time.RFC3339Nano prints it (trailing zeros of the fraction
 * dropped). `extraNanos` (0..999999) adds the sub-millisecond part when the caller has one.
 */
export function rfc3339Nano(d: Date, extraNanos = 0): string {
  const iso = d.toISOString(); // 2006-01-02T15:04:05.000Z
  const nanos = d.getUTCMilliseconds() * 1_000_000 + Math.max(0, Math.min(999_999, Math.floor(extraNanos)));
  const frac = nanos === 0 ? '' : '.' + String(nanos).padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac}Z`;
}

/** The RFC 3339 form (seconds precision) used in pod status times (metav1.Time). */
export function rfc3339(d: Date): string {
  return d.toISOString().slice(0, 19) + 'Z';
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000Z`;
}
