import type { KeyValue } from './interface.js';

/** Why a storage call failed; the registry layer translates each code into an API Status. */
export type StorageErrorCode =
  | 'NotFound'
  | 'KeyExists'
  | 'Conflict'
  | 'Compacted'
  | 'FutureRevision'
  | 'Unavailable'
  | 'InvalidArgument'
  | 'LeaseNotFound'
  | 'Closed'
  /** A stored value that cannot be read (no encryption provider can decrypt it); the message names the key. */
  | 'Internal';

export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    readonly details: {
      key?: string;
      /** The key's current value, on Conflict (so a caller can retry without another read). */
      current?: KeyValue | null;
      /** The store's oldest readable revision, on Compacted. */
      compactedRevision?: number;
      /** The store's current revision, on Compacted and FutureRevision. */
      currentRevision?: number;
    } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isStorageError(err: unknown, code?: StorageErrorCode): err is StorageError {
  return err instanceof StorageError && (code === undefined || err.code === code);
}

export const errors = {
  notFound: (key: string) => new StorageError('NotFound', `key not found: ${key}`, { key }),
  exists: (key: string) => new StorageError('KeyExists', `key already exists: ${key}`, { key }),
  conflict: (key: string, current: KeyValue | null) =>
    new StorageError('Conflict', `revision mismatch for key ${key}`, { key, current }),
  compacted: (revision: number, compactedRevision: number, currentRevision: number) =>
    new StorageError(
      'Compacted',
      `required revision ${revision} has been compacted (oldest available: ${compactedRevision})`,
      { compactedRevision, currentRevision },
    ),
  future: (revision: number, currentRevision: number) =>
    new StorageError('FutureRevision', `required revision ${revision} is a future revision (current: ${currentRevision})`, {
      currentRevision,
    }),
  unavailable: (message: string, cause?: unknown) =>
    new StorageError('Unavailable', `storage unavailable: ${message}`, {}, { cause }),
  invalid: (message: string) => new StorageError('InvalidArgument', message),
  leaseNotFound: (lease: number) => new StorageError('LeaseNotFound', `lease ${lease} not found`),
  closed: () => new StorageError('Closed', 'storage is closed'),
  internal: (message: string) => new StorageError('Internal', message),
};
