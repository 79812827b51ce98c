/** The Engine API's containers: events, create, start, stop, kill, remove, inspect, list, wait, logs. */
import { demuxDockerStream, looksMultiplexed } from '../docker-stream.js';
import { EngineError } from '../engine-errors.js';
import { backoffDelay, sleepWithSignal } from '../retry.js';
import { DEFAULT_STOP_TIMEOUT_S } from '../../core/model/container-spec.js';
import type { ContainerInspect, ContainerSpec, ContainerSummary, LogEntry, WaitResult } from '../../core/model/container-spec.js';

import { type CallOptions, type EngineEvent, type Filters, type RequestSpec, filtersParam, header, id, labelFilter } from './transport.js';
import { NetworksVolumesApi } from './networks-volumes.js';

export class ContainersApi extends NetworksVolumesApi {
  /**
   * `GET /events` for containers (optionally only those carrying `labels`), one callback per
   * event, until the engine closes the stream or `signal` aborts. Resolves when the stream ends
   * (the engine restarted, the connection dropped): the caller reconnects. The stream may stay
   * silent for hours, so no idle timeout applies. Not retried.
   */
  async events(opts: CallOptions & { labels?: Record<string, string | true>; onEvent: (e: EngineEvent) => void; onOpen?: () => void }): Promise<void> {
    const spec: RequestSpec = {
      method: 'GET',
      path: '/events',
      query: { filters: filtersParam({ type: ['container'], label: labelFilter(opts.labels) }) },
      idempotent: false,
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: 0,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    opts.onOpen?.();
    await this.jsonLines(res, spec, (line) => {
      if (!line.trim()) return;
      try {
        opts.onEvent(JSON.parse(line) as EngineEvent);
      } catch {
        /* a line that is not an event is skipped */
      }
    });
  }

  /**
   * Runs a container's health check once, now (libpod's `GET /libpod/containers/{name}/healthcheck`):
   * podman without systemd never runs them on its own. The result lands in `.State.Health`.
   * Docker runs its checks itself and has no such endpoint (NotFoundError).
   */
  async runHealthcheck(idOrName: string, opts: CallOptions = {}): Promise<void> {
    try {
      await this.empty({ method: 'GET', path: `/libpod/containers/${id(idOrName)}/healthcheck`, idempotent: false, accept: [409], signal: opts.signal });
    } catch (err) {
      // A check that ran past its timeout is one failed attempt, counted in `.State.Health` like any
      // other (the retries decide when it is unhealthy); podman answers it with a 500.
      if (err instanceof EngineError && err.status === 500 && /exceeded timeout/.test(err.message)) return;
      throw err;
    }
  }

  /** `POST /containers/{id}/kill`; false when it was not running (409) or is gone (404). */
  async killContainer(idOrName: string, opts: CallOptions & { signalName?: string } = {}): Promise<boolean> {
    const status = await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/kill`, query: { signal: opts.signalName ?? 'SIGKILL' }, accept: [404, 409], signal: opts.signal });
    return status < 300;
  }

  /** `POST /containers/{id}/rename?name=…`. */
  async renameContainer(idOrName: string, name: string, opts: CallOptions = {}): Promise<void> {
    await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/rename`, query: { name }, signal: opts.signal });
  }

  // ---------------------------------------------------------------- containers

  /** `POST /containers/create?name=…`. Not retried (a lost answer would otherwise create twice). */
  async createContainer(name: string, spec: ContainerSpec, opts: CallOptions = {}): Promise<{ Id: string; Warnings: string[] }> {
    const exposed: Record<string, object> = {};
    const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
    for (const p of spec.ports ?? []) {
      const key = `${p.containerPort}/${p.protocol ?? 'tcp'}`;
      exposed[key] = {};
      (bindings[key] ??= []).push({ HostIp: p.hostIp ?? '', HostPort: p.hostPort === undefined ? '' : String(p.hostPort) });
    }
    const hostConfig: Record<string, unknown> = {
      Mounts: (spec.volumes ?? []).map((v) => ({
        Type: 'volume',
        Source: v.volume,
        Target: v.target,
        ReadOnly: v.readOnly ?? false,
        ...(v.noCopy ? { VolumeOptions: { NoCopy: true } } : {}),
      })),
      PortBindings: bindings,
    };
    if (spec.binds) hostConfig.Binds = spec.binds;
    if (spec.privileged) hostConfig.Privileged = true;
    if (spec.networkMode) hostConfig.NetworkMode = spec.networkMode;
    if (spec.capAdd?.length) hostConfig.CapAdd = spec.capAdd;
    if (spec.capDrop?.length) hostConfig.CapDrop = spec.capDrop;
    if (spec.devices?.length) {
      hostConfig.Devices = spec.devices.map((d) => {
        const [host, inContainer, perms] = d.split(':');
        return { PathOnHost: host, PathInContainer: inContainer ?? host, CgroupPermissions: perms ?? 'rwm' };
      });
    }
    if (spec.pidMode) hostConfig.PidMode = spec.pidMode;
    if (spec.ipcMode) hostConfig.IpcMode = spec.ipcMode;
    if (spec.utsMode) hostConfig.UTSMode = spec.utsMode;
    if (spec.usernsMode) hostConfig.UsernsMode = spec.usernsMode;
    if (spec.securityOpt?.length) hostConfig.SecurityOpt = spec.securityOpt;
    const l = spec.limits ?? {};
    if (l.memory !== undefined) hostConfig.Memory = l.memory;
    if (l.memorySwap !== undefined) hostConfig.MemorySwap = l.memorySwap;
    if (l.memorySwappiness !== undefined) hostConfig.MemorySwappiness = l.memorySwappiness;
    if (l.memoryReservation !== undefined) hostConfig.MemoryReservation = l.memoryReservation;
    if (l.nanoCpus !== undefined) hostConfig.NanoCpus = l.nanoCpus;
    if (l.cpusetCpus !== undefined) hostConfig.CpusetCpus = l.cpusetCpus;
    if (l.cpuShares !== undefined) hostConfig.CpuShares = l.cpuShares;
    if (spec.init) hostConfig.Init = true;
    if (spec.ulimits?.length) hostConfig.Ulimits = spec.ulimits.map((u) => ({ Name: u.name, Soft: u.soft, Hard: u.hard }));
    if (spec.tmpfs && Object.keys(spec.tmpfs).length) hostConfig.Tmpfs = spec.tmpfs;
    if (spec.shmSize !== undefined) hostConfig.ShmSize = spec.shmSize;
    if (spec.restartPolicy) {
      hostConfig.RestartPolicy = { Name: spec.restartPolicy.name, MaximumRetryCount: spec.restartPolicy.maximumRetryCount ?? 0 };
    }
    const body: Record<string, unknown> = {
      Image: spec.image,
      Env: spec.env ?? [],
      Labels: spec.labels ?? {},
      ExposedPorts: exposed,
      HostConfig: hostConfig,
    };
    if (spec.cmd) body.Cmd = spec.cmd;
    if (spec.entrypoint) body.Entrypoint = spec.entrypoint;
    if (spec.user) body.User = spec.user;
    if (spec.workingDir) body.WorkingDir = spec.workingDir;
    if (spec.tty !== undefined) body.Tty = spec.tty;
    // Always set: podman's compat API makes an absent StopTimeout 0, so anyone's `podman stop`
    // would kill at once; 10 s is Docker's default and what berth's own stop waits.
    body.StopTimeout = spec.stopTimeoutS ?? DEFAULT_STOP_TIMEOUT_S;
    if (spec.hostname) body.Hostname = spec.hostname;
    if (spec.healthcheck) {
      // The Engine API counts durations in nanoseconds.
      const ns = (s: number | undefined) => (s === undefined ? undefined : Math.round(s * 1e9));
      const h = spec.healthcheck;
      body.Healthcheck = { Test: h.test, Interval: ns(h.intervalS), Timeout: ns(h.timeoutS), Retries: h.retries, StartPeriod: ns(h.startPeriodS) };
    }
    if (spec.networkMode && spec.networkAliases?.length && !['none', 'host', 'bridge', 'default'].includes(spec.networkMode)) {
      body.NetworkingConfig = { EndpointsConfig: { [spec.networkMode]: { Aliases: spec.networkAliases } } };
    }
    return this.json({ method: 'POST', path: '/containers/create', query: { name }, json: body, signal: opts.signal });
  }

  /** Resolves 'started', or 'already-running' (304). Not retried. */
  async startContainer(idOrName: string, opts: CallOptions = {}): Promise<'started' | 'already-running'> {
    const status = await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/start`, accept: [304], signal: opts.signal });
    return status === 304 ? 'already-running' : 'started';
  }

  /** Resolves 'stopped', or 'already-stopped' (304). Idempotent, so retried. */
  async stopContainer(idOrName: string, timeoutS = 10, opts: CallOptions = {}): Promise<'stopped' | 'already-stopped'> {
    const limit = (timeoutS + 30) * 1_000;
    const status = await this.empty({
      method: 'POST',
      path: `/containers/${id(idOrName)}/stop`,
      query: { t: timeoutS },
      accept: [304],
      idempotent: true,
      headersTimeoutMs: Math.max(limit, this.timeouts.metadataMs),
      bodyTimeoutMs: Math.max(limit, this.timeouts.metadataMs),
      signal: opts.signal,
    });
    return status === 304 ? 'already-stopped' : 'stopped';
  }

  /**
   * Resolves true when removed, false when there was no such container. Volumes are kept unless
   * asked. A forced removal that meets the container changing state under it (podman answers 500
   * "container state improper" for a container between two restarts of its restart policy) is
   * tried again, with backoff: it has either happened or it has not, so repeating it is safe.
   */
  async removeContainer(idOrName: string, opts: CallOptions & { force?: boolean; removeVolumes?: boolean } = {}): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        const status = await this.empty({
          method: 'DELETE',
          path: `/containers/${id(idOrName)}`,
          query: { force: opts.force ?? false, v: opts.removeVolumes ?? false },
          accept: [404],
          headersTimeoutMs: Math.max(60_000, this.timeouts.metadataMs),
          signal: opts.signal,
        });
        return status !== 404;
      } catch (err) {
        const stateRace = opts.force && err instanceof EngineError && (err.status === 409 || err.status === 500);
        if (!stateRace || attempt >= this.retry.retries || opts.signal?.aborted) throw err;
        await sleepWithSignal(backoffDelay(attempt, this.retry), opts.signal);
      }
    }
  }

  async inspectContainer(idOrName: string, opts: CallOptions = {}): Promise<ContainerInspect> {
    return this.json<ContainerInspect>({ method: 'GET', path: `/containers/${id(idOrName)}/json`, signal: opts.signal });
  }

  async listContainers(opts: CallOptions & { all?: boolean; labels?: Record<string, string | true> | string[]; name?: string[]; status?: string[] } = {}): Promise<ContainerSummary[]> {
    const filters: Filters = { label: labelFilter(opts.labels), name: opts.name ?? [], status: opts.status ?? [] };
    const res = await this.json<ContainerSummary[] | null>({
      method: 'GET',
      path: '/containers/json',
      query: { all: opts.all ?? true, filters: filtersParam(filters) },
      signal: opts.signal,
    });
    return res ?? [];
  }

  /**
   * `POST /containers/{id}/wait`: resolves when the container reaches the condition
   * (default not-running). No timeout (pass a signal); not retried.
   */
  async waitContainer(idOrName: string, opts: CallOptions & { condition?: 'not-running' | 'next-exit' | 'removed' } = {}): Promise<WaitResult> {
    return this.json<WaitResult>({
      method: 'POST',
      path: `/containers/${id(idOrName)}/wait`,
      query: { condition: opts.condition ?? 'not-running' },
      headersTimeoutMs: 0,
      bodyTimeoutMs: 0,
      signal: opts.signal,
    });
  }

  /**
   * Logs as lines, demultiplexed into stdout/stderr when the container has no TTY. Bounded by
   * `maxBytes` (default 8 MiB): past it the rest is dropped and `truncated` is set.
   */
  async containerLogs(
    idOrName: string,
    opts: CallOptions & {
      tail?: number | 'all';
      timestamps?: boolean;
      stdout?: boolean;
      stderr?: boolean;
      since?: number;
      /** Whether the container has a TTY; asked from the engine when unknown. */
      tty?: boolean;
      maxBytes?: number;
      /**
       * Follow: keep the stream open for new lines until the container stops or `signal` aborts,
       * handing each line to `onEntry` as it comes (none are kept; no size bound, no idle timeout).
       */
      follow?: { onEntry: (e: LogEntry) => void };
    } = {},
  ): Promise<{ entries: LogEntry[]; truncated: boolean }> {
    const follow = opts.follow;
    const spec: RequestSpec = {
      method: 'GET',
      path: `/containers/${id(idOrName)}/logs`,
      query: {
        stdout: opts.stdout ?? true,
        stderr: opts.stderr ?? true,
        timestamps: opts.timestamps ?? false,
        tail: opts.tail === undefined ? 'all' : String(opts.tail),
        since: opts.since,
        follow: follow !== undefined,
      },
      ...(follow
        ? { idempotent: false, headersTimeoutMs: this.timeouts.streamHeadersMs, bodyTimeoutMs: 0 }
        : { headersTimeoutMs: this.timeouts.metadataMs, bodyTimeoutMs: this.timeouts.streamIdleMs }),
      signal: opts.signal,
    };
    const res = await this.request(spec);
    // Docker 1.42+ says which format it sends; podman sends application/octet-stream for both.
    const type = header(res, 'content-type') ?? '';
    let tty: boolean | undefined = opts.tty;
    if (type.includes('multiplexed-stream')) tty = false;
    else if (type.includes('raw-stream')) tty = true;
    const maxBytes = follow ? Number.POSITIVE_INFINITY : (opts.maxBytes ?? 8 * 1024 * 1024);
    const entries: LogEntry[] = [];
    const keep = follow ? follow.onEntry : (e: LogEntry) => void entries.push(e);
    const partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };
    let total = 0;
    let truncated = false;
    const timestamps = opts.timestamps ?? false;
    const pushLine = (stream: 'stdout' | 'stderr', raw: string) => {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (timestamps) {
        const sp = line.indexOf(' ');
        if (sp > 0 && /^\d{4}-\d\d-\d\dT/.test(line)) {
          keep({ stream, timestamp: line.slice(0, sp), line: line.slice(sp + 1) });
          return;
        }
      }
      keep({ stream, line });
    };
    const feed = (stream: 'stdout' | 'stderr', data: Buffer) => {
      if (truncated) return;
      if (total + data.length > maxBytes) {
        data = data.subarray(0, Math.max(0, maxBytes - total));
        truncated = true;
      }
      total += data.length;
      const text = partial[stream] + data.toString('utf8');
      const lines = text.split('\n');
      partial[stream] = lines.pop() ?? '';
      for (const l of lines) pushLine(stream, l);
    };
    try {
      const body = res.body as AsyncIterable<Buffer>;
      if (tty === undefined) {
        // Unknown: peek at the first bytes, and ask the engine only when they are ambiguous.
        const it = body[Symbol.asyncIterator]();
        let head = Buffer.alloc(0);
        while (head.length < 8) {
          const next = await it.next();
          if (next.done) break;
          head = Buffer.concat([head, next.value]);
        }
        if (head.length === 0) tty = false;
        else if (!looksMultiplexed(head)) tty = true;
        else tty = (await this.inspectContainer(idOrName, opts)).Config.Tty === true;
        const rest: AsyncIterable<Buffer> = {
          [Symbol.asyncIterator]: async function* () {
            if (head.length) yield head;
            for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
          },
        };
        await this.consumeLogs(rest, tty, feed, () => truncated);
      } else {
        await this.consumeLogs(body, tty, feed, () => truncated);
      }
    } catch (err) {
      res.body.destroy();
      throw this.mapTransportError(err, spec);
    }
    if (truncated) res.body.destroy();
    for (const stream of ['stdout', 'stderr'] as const) if (partial[stream]) pushLine(stream, partial[stream]);
    return { entries, truncated };
  }

  private async consumeLogs(body: AsyncIterable<Buffer>, tty: boolean, feed: (stream: 'stdout' | 'stderr', data: Buffer) => void, done: () => boolean): Promise<void> {
    if (tty) {
      for await (const chunk of body) {
        feed('stdout', chunk);
        if (done()) return;
      }
      return;
    }
    for await (const frame of demuxDockerStream(body)) {
      if (frame.stream !== 'stdin') feed(frame.stream, frame.data);
      if (done()) return;
    }
  }
}
