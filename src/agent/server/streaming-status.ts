// The metav1.Status values the streaming protocols (v4 and v5) send on their error channel at the end
// of an exec or attach, as kubelet's remotecommand server writes them.

export const SUCCESS_STATUS = { metadata: {}, status: 'Success' };

/** The end of a command: Success for 0, else Failure NonZeroExitCode with the code as the ExitCode cause. */
export function exitStatus(code: number, cmd: string[]): object {
  if (code === 0) return SUCCESS_STATUS;
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${cmd.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

/** An InternalError Status (the command could not be run). */
export function internalStatus(message: string): object {
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    details: { causes: [{ message }] },
    code: 500,
  };
}
