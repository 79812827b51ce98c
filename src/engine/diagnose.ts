/**
 * What went wrong reaching an engine, in words a person (or an agent) can act on. Validation
 * logs are built from these; nothing a remote peer sent is repeated, only what berth observed
 * (a status code, an error code, the path it tried).
 */
import type { EngineTarget } from '../core/engine-target.js';
import type { SshConnection } from '../ssh/connection.js';
import { SshError } from '../ssh/connection.js';
import { EngineError, EngineTimeoutError, EngineUnreachableError } from './engine-errors.js';

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/;

export function describeEngineFailure(err: unknown, target: EngineTarget): string {
  const where = target.transport === 'unix' ? target.socketPath : target.transport === 'tcp' ? `${target.host}:${target.port}` : `${target.socketPath} on ${target.host}`;
  const cause = (err as { cause?: unknown })?.cause;
  if (cause instanceof SshError) return cause.message;
  if (err instanceof SshError) return err.message;
  if (err instanceof EngineUnreachableError) {
    const code = err.code ?? '';
    if (code === 'BERTH_ADDRESS_REFUSED') return (err.cause as Error | undefined)?.message ?? err.message;
    switch (code) {
      case 'ENOENT':
        return `No engine socket at ${where}: is Docker (or podman's API service) running, and is the path right?`;
      case 'EACCES':
        return `berth may not open ${where} (permission denied): run berth as a user in the docker group, or fix the socket's permissions.`;
      case 'ECONNREFUSED':
        return target.transport === 'unix'
          ? `Nothing listens on ${where}: the engine is not running.`
          : `Connection to ${where} refused: nothing listens there (is the engine's TCP socket enabled on that port?).`;
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return `The host name ${target.transport === 'tcp' ? target.host : where} could not be resolved (${code}): check the spelling, or give the IP address.`;
      case 'UND_ERR_CONNECT_TIMEOUT':
        return `Connection to ${where} timed out: is the address right, and does a firewall let the port through?`;
      case 'EHOSTUNREACH':
      case 'ENETUNREACH':
        return `${where} is unreachable from the berth host (${code}).`;
    }
    if (TLS_CODE.test(code)) return `The TLS handshake with ${where} failed (${code}): check engine_tls (the CA, the client certificate and its key) and that the port speaks TLS.`;
    return `The engine at ${where} could not be reached (${code || 'connection failed'}).`;
  }
  if (err instanceof EngineTimeoutError) return `The engine at ${where} accepted the connection but did not answer in time.`;
  if (err instanceof EngineError) {
    return `Something answered at ${where} that is not a Docker Engine API${err.status ? ` (HTTP ${err.status}${err.path ? ` to ${err.method ?? 'GET'} ${err.path}` : ''})` : ''}.`;
  }
  return `The engine at ${where} could not be checked (${(err as Error)?.name ?? 'error'}).`;
}

/**
 * Why sshd would not forward to the socket: missing, not a socket, or not accessible to the
 * user. sshd's refusal does not say, so ask the host (needs a shell; without one, say what it
 * could be). The path passed the endpoint validator's narrow character set.
 */
export async function diagnoseSocket(ssh: SshConnection, target: Extract<EngineTarget, { transport: 'ssh' }>): Promise<string> {
  const p = target.socketPath;
  const script = `p='${p}'; if [ ! -e "$p" ]; then echo missing; elif [ ! -S "$p" ]; then echo not-socket; elif [ -r "$p" ] && [ -w "$p" ]; then echo ok; else echo denied; fi`;
  let verdict = '';
  try {
    verdict = (await ssh.exec(script)).stdout.trim();
  } catch {
    /* no shell for this user, or exec refused */
  }
  const at = `${p} on ${target.host}`;
  switch (verdict) {
    case 'missing':
      return `No Docker socket at ${at}: is Docker installed and running there? If the engine listens elsewhere, set engine_endpoint to ssh://${target.user}@${target.host}:${target.port}/path/to/docker.sock.`;
    case 'not-socket':
      return `${at} exists but is not a socket: point engine_endpoint at the engine's socket.`;
    case 'denied':
      return `User ${target.user} may not open ${at} (permission denied): add the user to the docker group (sudo usermod -aG docker ${target.user}, then connect again) or connect as root.`;
    case 'ok':
      return `sshd on ${target.host} refused to forward a stream to ${p} although the socket is there: sshd_config must allow forwarding (AllowStreamLocalForwarding yes, and neither "AllowTcpForwarding no" nor "DisableForwarding yes").`;
    default:
      return `sshd on ${target.host} would not open ${p}: the socket may be missing or not accessible to ${target.user} (docker group), or sshd forbids forwarding (AllowStreamLocalForwarding, AllowTcpForwarding, DisableForwarding).`;
  }
}
