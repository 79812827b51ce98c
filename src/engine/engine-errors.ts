/**
 * Errors of the runtime: every failure of an engine call is one of these, so callers can tell
 * "the engine is not there" from "the engine said no" from "the thing does not exist".
 */

export interface EngineErrorDetails {
  /** The engine endpoint as configured (`unix:///…`, `tcp://host:port`). */
  endpoint: string;
  method?: string;
  path?: string;
  /** HTTP status the engine answered with; absent for transport failures. */
  status?: number;
  /** The engine's own message (`{"message": …}` body), when it sent one. */
  engineMessage?: string;
  cause?: unknown;
}

/** The engine answered with an error status, or the call failed in a way not covered below. */
export class EngineError extends Error {
  override name = 'EngineError';
  readonly endpoint: string;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly status: number | undefined;
  readonly engineMessage: string | undefined;

  constructor(message: string, details: EngineErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.endpoint = details.endpoint;
    this.method = details.method;
    this.path = details.path;
    this.status = details.status;
    this.engineMessage = details.engineMessage;
  }
}

/** No connection could be made: socket missing, connection refused, host unreachable, connect timeout, TLS handshake failure. */
export class EngineUnreachableError extends EngineError {
  override name = 'EngineUnreachableError';
  /** The system error code (ENOENT, ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT, …) when known. */
  readonly code: string | undefined;
  /** Trying again as is cannot help (SSH login refused, host key changed, address refused). */
  readonly permanent: boolean;
  constructor(details: EngineErrorDetails & { code?: string; reason?: string; permanent?: boolean }) {
    super(`engine ${details.endpoint} is unreachable${details.code && !details.code.startsWith('BERTH_') ? ` (${details.code})` : ''}${details.reason ? `: ${details.reason}` : ''}`, details);
    this.code = details.code;
    this.permanent = details.permanent ?? false;
  }
}

/** Connected, but the engine did not answer (headers or body) in time, or the connection broke mid-call. */
export class EngineTimeoutError extends EngineError {
  override name = 'EngineTimeoutError';
}

/** 404: no such container, image, volume or network. */
export class NotFoundError extends EngineError {
  override name = 'NotFoundError';
}

/** 409: name already in use, volume in use, container in the wrong state. */
export class ConflictError extends EngineError {
  override name = 'ConflictError';
}

/** The copied volume's content on the destination does not match what was read from the source. */
export class VerificationError extends Error {
  override name = 'VerificationError';
  constructor(
    message: string,
    readonly differences: string[],
  ) {
    super(message);
  }
}
