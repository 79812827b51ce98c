/** The Engine API client: exec and archives, the last of the areas, and the helpers built on them. */
import { pipeline, Transform, type Duplex, type Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { demuxDockerStream, type StreamFrame } from '../docker-stream.js';
import { EngineError, EngineTimeoutError, NotFoundError } from '../engine-errors.js';
import type { ImageInspect, PathStat } from '../../core/model/container-spec.js';

import { type CallOptions, type RequestSpec, header, id, goFileModeToUnix } from './transport.js';
import { SwarmApi } from './swarm.js';

/**
 * A Docker Engine API client over undici (unix socket, TCP, TCP with TLS); podman's Docker-compatible
 * service too. Each area of the API is one class in this folder, each extending the one before.
 */
export class EngineClient extends SwarmApi {
  // ---------------------------------------------------------------- exec

  /**
   * Runs a command in a running container (`POST /containers/{id}/exec`, then `/exec/{id}/start`
   * without a TTY): its output demultiplexed as it comes, and its exit code once it has ended.
   * Not retried. The output must be consumed (or the call aborted).
   */
  async exec(idOrName: string, cmd: string[], opts: CallOptions = {}): Promise<{ output: AsyncGenerator<StreamFrame>; exitCode: () => Promise<number> }> {
    const Id = await this.createExec(idOrName, cmd, false, opts.signal);
    const res = await this.request({
      method: 'POST',
      path: `/exec/${id(Id)}/start`,
      json: { Detach: false, Tty: false },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    return { output: demuxDockerStream(res.body as AsyncIterable<Buffer>), exitCode: this.execExitCode(Id, opts.signal) };
  }

  /**
   * Like exec, with the command's stdin open: the start is hijacked (`Upgrade: tcp`, as `docker
   * exec -i` does), so bytes written to `input` reach the command at once, with no engine call
   * and no process started. Ending or destroying `input` gives the command end of file.
   */
  async execWithInput(idOrName: string, cmd: string[], opts: CallOptions = {}): Promise<{ output: AsyncGenerator<StreamFrame>; exitCode: () => Promise<number>; input: Duplex }> {
    const Id = await this.createExec(idOrName, cmd, true, opts.signal);
    const path = `${await this.apiPrefix(opts.signal)}/exec/${id(Id)}/start`;
    let socket: Duplex;
    try {
      // undici passes a body on to the request though its upgrade options do not declare one.
      const upgrade: Dispatcher.UpgradeOptions & { body: string } = {
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ Detach: false, Tty: false }),
        protocol: 'tcp',
        signal: opts.signal ?? null,
      };
      ({ socket } = await this.pool.upgrade(upgrade));
    } catch (err) {
      throw this.mapTransportError(err, { method: 'POST', path: `/exec/${id(Id)}/start` });
    }
    // Once upgraded the socket is berth's alone: an abort ends it, as it ends exec's streamed body.
    const signal = opts.signal;
    if (signal) {
      const abort = () => socket.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', abort, { once: true });
      socket.once('close', () => signal.removeEventListener('abort', abort));
    }
    return { output: demuxDockerStream(socket as AsyncIterable<Buffer>), exitCode: this.execExitCode(Id, opts.signal), input: socket };
  }

  private async createExec(idOrName: string, cmd: string[], stdin: boolean, signal?: AbortSignal): Promise<string> {
    const { Id } = await this.json<{ Id: string }>({
      method: 'POST',
      path: `/containers/${id(idOrName)}/exec`,
      json: { Cmd: cmd, AttachStdout: true, AttachStderr: true, AttachStdin: stdin, Tty: false },
      signal,
    });
    return Id;
  }

  private execExitCode(Id: string, signal?: AbortSignal): () => Promise<number> {
    return async () => {
      const info = await this.json<{ ExitCode: number | null; Running: boolean }>({ method: 'GET', path: `/exec/${id(Id)}/json`, signal });
      if (info.Running || info.ExitCode === null) throw new EngineError(`exec ${Id} on ${this.endpoint} has not ended`, { endpoint: this.endpoint });
      return info.ExitCode;
    };
  }

  /** Runs a shell script in a running container; its output (bounded) and exit code. */
  async execScript(idOrName: string, script: string, opts: CallOptions & { maxBytes?: number } = {}): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return collectExec(await this.exec(idOrName, ['sh', '-c', script], opts), opts.maxBytes);
  }

  // ---------------------------------------------------------------- archives

  /** `HEAD /containers/{id}/archive?path=…`: what is at a path (works on stopped containers). */
  async statPath(idOrName: string, path: string, opts: CallOptions = {}): Promise<PathStat> {
    const res = await this.request({ method: 'HEAD', path: `/containers/${id(idOrName)}/archive`, query: { path }, signal: opts.signal });
    await res.body.dump().catch(() => undefined);
    const raw = header(res, 'x-docker-container-path-stat');
    if (!raw) {
      throw new EngineError(`engine ${this.endpoint} sent no X-Docker-Container-Path-Stat for ${path}`, {
        endpoint: this.endpoint,
        method: 'HEAD',
        path: `/containers/${idOrName}/archive`,
        status: res.status,
      });
    }
    const stat = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as {
      name: string;
      size: number;
      mode: number;
      mtime: string;
      linkTarget?: string;
      isDir?: boolean;
    };
    return {
      name: stat.name,
      size: stat.size,
      mode: goFileModeToUnix(stat.mode),
      mtime: stat.mtime,
      isDir: stat.isDir ?? (stat.mode & 0x80000000) !== 0,
      linkTarget: stat.linkTarget ?? '',
    };
  }

  /**
   * `GET /containers/{id}/archive?path=…`: the tar of a path as a stream, never buffered. The
   * caller must consume or destroy it. `path/.` gives the directory's content without the
   * directory itself.
   */
  async getArchive(idOrName: string, path: string, opts: CallOptions = {}): Promise<Readable> {
    const res = await this.request({
      method: 'GET',
      path: `/containers/${id(idOrName)}/archive`,
      query: { path },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    return res.body;
  }

  /**
   * `PUT /containers/{id}/archive?path=…`: extracts a tar stream at a directory, streaming the
   * request body. Not retried. No overall timeout; a stall longer than streamIdleMs (nothing read
   * from `tar`, or no answer after the last byte) aborts it.
   */
  async putArchive(idOrName: string, path: string, tar: Readable, opts: CallOptions & { noOverwriteDirNonDir?: boolean } = {}): Promise<void> {
    const idle = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, idle.signal]) : idle.signal;
    const idleMs = this.timeouts.streamIdleMs;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => idle.abort(new EngineTimeoutError(`engine ${this.endpoint}: archive upload to ${path} stalled for ${idleMs} ms`, { endpoint: this.endpoint })), idleMs);
      timer.unref?.();
    };
    arm();
    // Every chunk the engine takes re-arms the watchdog. pipeline() carries an error of `tar`
    // into the request (which then fails) and a failed request back into `tar` (destroyed).
    const watched = new Transform({
      transform(chunk, _enc, cb) {
        arm();
        cb(null, chunk);
      },
    });
    pipeline(tar, watched, () => undefined);
    const spec: RequestSpec = {
      method: 'PUT',
      path: `/containers/${id(idOrName)}/archive`,
      query: { path, noOverwriteDirNonDir: opts.noOverwriteDirNonDir || undefined },
      headers: { 'content-type': 'application/x-tar' },
      stream: watched,
      headersTimeoutMs: 0,
      bodyTimeoutMs: idleMs,
      signal,
    };
    try {
      await this.empty(spec);
    } catch (err) {
      if (idle.signal.aborted && !opts.signal?.aborted) throw idle.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
      watched.destroy();
    }
  }
}

/** Pulls an image only when the engine does not have it. */
export async function ensureImage(engine: EngineClient, ref: string, opts: CallOptions = {}): Promise<ImageInspect> {
  try {
    return await engine.inspectImage(ref, opts);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  await engine.pullImage(ref, opts);
  return engine.inspectImage(ref, opts);
}

/** A started exec's output (each stream kept up to `max` bytes) and its exit code, once it has ended. */
export async function collectExec(started: Awaited<ReturnType<EngineClient['exec']>>, max = 64 * 1024): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const out: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
  const size = { stdout: 0, stderr: 0 };
  for await (const f of started.output) {
    if (f.stream === 'stdin' || size[f.stream] >= max) continue;
    out[f.stream].push(f.data);
    size[f.stream] += f.data.length;
  }
  const text = (k: 'stdout' | 'stderr') => Buffer.concat(out[k]).toString('utf8').slice(0, max);
  return { exitCode: await started.exitCode(), stdout: text('stdout'), stderr: text('stderr') };
}
