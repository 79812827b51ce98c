/** The Engine API's images: inspect, list, remove, pull, build, and the image and build-cache prunes. */
import type { Readable } from 'node:stream';
import { EngineError } from '../engine-errors.js';
import type { ImageInspect } from '../../core/model/container-spec.js';

import { type CallOptions, type RequestSpec, type Response, filtersParam, splitImageRef } from './transport.js';
import { EngineTransport } from './transport.js';

export class ImagesApi extends EngineTransport {
  // ---------------------------------------------------------------- images

  async inspectImage(ref: string, opts: CallOptions = {}): Promise<ImageInspect> {
    return this.json<ImageInspect>({ method: 'GET', path: `/images/${encodeURI(ref)}/json`, signal: opts.signal });
  }

  /** `GET /images/json` with a reference filter (a repository name: every tag of it). */
  async listImages(reference: string, opts: CallOptions = {}): Promise<{ Id: string; RepoTags?: string[] | null; Created: number }[]> {
    return this.json({ method: 'GET', path: '/images/json', query: { filters: filtersParam({ reference: [reference] }) }, signal: opts.signal });
  }

  /** `DELETE /images/{ref}` (one tag; the image goes with its last tag); false when there was none. A 409 (in use) throws. */
  async removeImage(ref: string, opts: CallOptions = {}): Promise<boolean> {
    const status = await this.empty({ method: 'DELETE', path: `/images/${encodeURI(ref)}`, accept: [404], signal: opts.signal });
    return status !== 404;
  }

  /**
   * `POST /images/create?fromImage=…`. The engine reports failures inside a 200 stream of JSON
   * progress lines; those become an EngineError with the engine's message. Not retried.
   */
  async pullImage(ref: string, opts: CallOptions & { auth?: { username: string; password: string; serveraddress?: string }; onProgress?: (status: string) => void } = {}): Promise<void> {
    const { fromImage, tag } = splitImageRef(ref);
    const spec: RequestSpec = {
      method: 'POST',
      path: '/images/create',
      query: { fromImage, tag },
      headers: opts.auth ? { 'x-registry-auth': Buffer.from(JSON.stringify(opts.auth)).toString('base64url') } : {},
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    const handle = (line: string) => {
      if (!line.trim()) return;
      let msg: { error?: string; errorDetail?: { message?: string }; status?: string };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      const error = msg.errorDetail?.message ?? msg.error;
      if (error) {
        throw new EngineError(`pulling ${ref} on engine ${this.endpoint} failed: ${error}`, {
          endpoint: this.endpoint,
          method: 'POST',
          path: '/images/create',
          status: res.status,
          engineMessage: error,
        });
      }
      if (msg.status) opts.onProgress?.(msg.status);
    };
    await this.jsonLines(res, spec, handle);
  }

  /** Feeds each line of a JSON-lines progress stream (pull, build) to `handle`, which may throw. */
  protected async jsonLines(res: Response, spec: RequestSpec, handle: (line: string) => void): Promise<void> {
    let buffered = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        buffered += decoder.decode(chunk as Buffer, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          handle(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
        }
      }
      handle(buffered);
    } catch (err) {
      res.body.destroy();
      throw this.mapTransportError(err, spec);
    }
  }

  /**
   * `POST /build` from a tar context: the image is tagged `tag`. Each output line goes to `onLine`.
   * A failed build still answers 200 with an error line at the end (podman and Docker): that
   * line is thrown as an EngineError with the engine's own words.
   */
  async build(context: Readable, opts: CallOptions & { tag: string; dockerfile: string; onLine?: (line: string) => void }): Promise<void> {
    const spec: RequestSpec = {
      method: 'POST',
      path: '/build',
      query: { t: opts.tag, dockerfile: opts.dockerfile, rm: '1', forcerm: '1' },
      stream: context,
      headers: { 'content-type': 'application/x-tar' },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    let failure: string | undefined;
    const handle = (line: string) => {
      if (!line.trim()) return;
      let msg: { stream?: string; error?: string; errorDetail?: { message?: string } };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      const error = msg.errorDetail?.message ?? msg.error;
      if (error) failure ??= error;
      const text = (error ?? msg.stream ?? '').replace(/\n$/, '');
      if (text) opts.onLine?.(text);
    };
    await this.jsonLines(res, spec, handle);
    if (failure) throw new EngineError(`the build failed: ${failure}`, { endpoint: this.endpoint, method: 'POST', path: '/build', status: res.status, engineMessage: failure });
  }

  /** `GET /images/{ref}/get`: the image as a tar stream (`docker save`), for loadImage on another engine. */
  async saveImage(ref: string, opts: CallOptions = {}): Promise<Readable> {
    const res = await this.request({
      method: 'GET',
      path: `/images/${encodeURI(ref)}/get`,
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    return res.body;
  }

  /** `POST /images/load` from a saveImage stream; an error line in the 200 answer is thrown. */
  async loadImage(tar: Readable, opts: CallOptions = {}): Promise<void> {
    const spec: RequestSpec = {
      method: 'POST',
      path: '/images/load',
      stream: tar,
      headers: { 'content-type': 'application/x-tar' },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    let failure: string | undefined;
    await this.jsonLines(res, spec, (line) => {
      try {
        const msg = JSON.parse(line) as { error?: string; errorDetail?: { message?: string } };
        failure ??= msg.errorDetail?.message ?? msg.error;
      } catch {
        // Not JSON (podman may answer plain text): nothing to read.
      }
    });
    if (failure) throw new EngineError(`loading the image failed: ${failure}`, { endpoint: this.endpoint, method: 'POST', path: '/images/load', status: res.status, engineMessage: failure });
  }

  // ---------------------------------------------------------------- cleanup

  /** `POST /images/prune`: dangling images only, or (dangling false) every image no container uses. */
  async pruneImages(opts: CallOptions & { danglingOnly: boolean }): Promise<{ deleted: number; reclaimed: number }> {
    const r = await this.json<{ ImagesDeleted?: unknown[] | null; SpaceReclaimed?: number }>({
      method: 'POST',
      path: '/images/prune',
      query: { filters: filtersParam({ dangling: [String(opts.danglingOnly)] }) },
      signal: opts.signal,
    });
    return { deleted: r.ImagesDeleted?.length ?? 0, reclaimed: r.SpaceReclaimed ?? 0 };
  }

  /** `POST /build/prune`; null when the engine has no build cache endpoint. */
  async pruneBuildCache(opts: CallOptions = {}): Promise<{ reclaimed: number } | null> {
    const res = await this.request({ method: 'POST', path: '/build/prune', accept: [404, 405, 501], signal: opts.signal });
    if (res.status >= 300) {
      await res.body.dump().catch(() => undefined);
      return null;
    }
    const r = (await res.body.json()) as { SpaceReclaimed?: number };
    return { reclaimed: r.SpaceReclaimed ?? 0 };
  }
}
