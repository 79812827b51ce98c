/**
 * The Engine API's Swarm calls: the node's swarm state (`GET /info`), services (create, inspect,
 * update, delete, logs) and their tasks. They answer on a manager only; a worker or a plain
 * engine answers 503 ("This node is not a swarm manager").
 */
import { demuxDockerStream } from '../docker-stream.js';
import type { LogEntry } from '../../core/model/container-spec.js';

import { type CallOptions, filtersParam, id } from './transport.js';
import { ContainersApi } from './containers.js';

/** What `GET /info` says of the node's part in a swarm. */
export interface SwarmState {
  /** `inactive`, `pending`, `active`, `error`, `locked`. */
  localNodeState: string;
  /** A manager (it answers the swarm API); an active node that is not one is a worker. */
  controlAvailable: boolean;
  nodeId: string;
  nodes: number;
  managers: number;
}

/** The parts of a service's inspect berth reads (the spec berth sends is written as Docker's). */
export interface ServiceInspect {
  ID: string;
  Version: { Index: number };
  Spec: ServiceSpec;
  UpdateStatus?: { State?: string; StartedAt?: string; CompletedAt?: string; Message?: string } | null;
}

/** Docker's ServiceSpec, as much of it as berth writes (the engine takes it as JSON). */
export interface ServiceSpec {
  Name: string;
  Labels?: Record<string, string>;
  TaskTemplate: {
    ContainerSpec: Record<string, unknown>;
    Resources?: { Limits?: { NanoCPUs?: number; MemoryBytes?: number }; Reservations?: { NanoCPUs?: number; MemoryBytes?: number } };
    RestartPolicy?: { Condition: 'none' | 'on-failure' | 'any'; Delay?: number; MaxAttempts?: number; Window?: number };
    Placement?: { Constraints?: string[]; Preferences?: { Spread: { SpreadDescriptor: string } }[]; MaxReplicas?: number };
    Networks?: { Target: string; Aliases?: string[] }[];
    ForceUpdate?: number;
  };
  Mode: { Replicated: { Replicas: number } };
  UpdateConfig?: { Parallelism: number; Delay?: number; FailureAction: 'pause' | 'continue' | 'rollback'; Monitor?: number; Order: 'stop-first' | 'start-first' };
  RollbackConfig?: { Parallelism: number; Delay?: number; FailureAction: 'pause' | 'continue'; Monitor?: number; Order: 'stop-first' | 'start-first' };
  EndpointSpec?: { Mode?: 'vip' | 'dnsrr'; Ports?: { Protocol: string; TargetPort: number; PublishedPort?: number; PublishMode?: 'ingress' | 'host' }[] };
}

/** One task of a service (the parts berth reads). */
export interface SwarmTask {
  ID: string;
  Slot?: number;
  NodeID?: string;
  DesiredState: string;
  CreatedAt?: string;
  Spec?: { ContainerSpec?: { Image?: string } };
  Status: { State: string; Timestamp?: string; Message?: string; Err?: string; ContainerStatus?: { ContainerID?: string; ExitCode?: number } };
}

/** A service log line with the task that wrote it. */
export interface ServiceLogEntry extends LogEntry {
  taskId: string | null;
}

export class SwarmApi extends ContainersApi {
  /** The node's swarm state, from `GET /info` (every engine answers it; podman has no Swarm field). */
  async swarmState(opts: CallOptions = {}): Promise<SwarmState> {
    const info = await this.json<{ Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeID?: string; Nodes?: number; Managers?: number } }>({
      method: 'GET',
      path: '/info',
      signal: opts.signal,
    });
    const s = info.Swarm ?? {};
    return { localNodeState: s.LocalNodeState || 'inactive', controlAvailable: s.ControlAvailable === true, nodeId: s.NodeID ?? '', nodes: s.Nodes ?? 0, managers: s.Managers ?? 0 };
  }

  async createService(spec: ServiceSpec, opts: CallOptions = {}): Promise<{ ID: string }> {
    return this.json<{ ID: string }>({ method: 'POST', path: '/services/create', json: spec, idempotent: false, signal: opts.signal });
  }

  /** Resolves null when there is no such service. */
  async inspectService(nameOrId: string, opts: CallOptions = {}): Promise<ServiceInspect | null> {
    const res = await this.request({ method: 'GET', path: `/services/${id(nameOrId)}`, accept: [404], signal: opts.signal });
    if (res.status === 404) {
      await res.body.dump().catch(() => undefined);
      return null;
    }
    return (await res.body.json()) as ServiceInspect;
  }

  /** `POST /services/{id}/update` at the version read (a concurrent change answers 409/500 and is not retried). */
  async updateService(nameOrId: string, version: number, spec: ServiceSpec, opts: CallOptions = {}): Promise<void> {
    await this.json<unknown>({ method: 'POST', path: `/services/${id(nameOrId)}/update`, query: { version }, json: spec, idempotent: false, signal: opts.signal });
  }

  /** Resolves true when removed, false when there was no such service. */
  async removeService(nameOrId: string, opts: CallOptions = {}): Promise<boolean> {
    return (await this.empty({ method: 'DELETE', path: `/services/${id(nameOrId)}`, accept: [404], signal: opts.signal })) !== 404;
  }

  async listServices(opts: CallOptions & { labels?: string[] } = {}): Promise<ServiceInspect[]> {
    return this.json<ServiceInspect[]>({ method: 'GET', path: '/services', query: { filters: filtersParam({ label: opts.labels ?? [] }) }, signal: opts.signal });
  }

  /** A service's tasks (`desiredState`: only those the orchestrator wants in that state). */
  async listTasks(service: string, opts: CallOptions & { desiredState?: 'running' | 'shutdown' | 'accepted' } = {}): Promise<SwarmTask[]> {
    const filters = { service: [service], 'desired-state': opts.desiredState ? [opts.desiredState] : [] };
    return this.json<SwarmTask[]>({ method: 'GET', path: '/tasks', query: { filters: filtersParam(filters) }, signal: opts.signal });
  }

  /**
   * `GET /services/{id}/logs` across every task, with `details` so each line names its task
   * (`com.docker.swarm.task.id=…`). A service without a TTY sends the multiplexed stream.
   */
  async serviceLogs(nameOrId: string, opts: CallOptions & { tail?: number; timestamps?: boolean; maxBytes?: number } = {}): Promise<ServiceLogEntry[]> {
    const res = await this.request({
      method: 'GET',
      path: `/services/${id(nameOrId)}/logs`,
      query: { stdout: true, stderr: true, details: true, timestamps: opts.timestamps ?? false, tail: opts.tail === undefined ? 'all' : String(opts.tail), follow: false },
      headersTimeoutMs: this.timeouts.metadataMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    const max = opts.maxBytes ?? 8 * 1024 * 1024;
    const out: ServiceLogEntry[] = [];
    const partial = { stdout: '', stderr: '' };
    let total = 0;
    for await (const f of demuxDockerStream(res.body as AsyncIterable<Buffer>)) {
      if (f.stream === 'stdin' || total > max) continue;
      total += f.data.length;
      const lines = (partial[f.stream] + f.data.toString('utf8')).split('\n');
      partial[f.stream] = lines.pop() ?? '';
      for (const l of lines) out.push(parseServiceLogLine(f.stream, l, opts.timestamps ?? false));
    }
    for (const s of ['stdout', 'stderr'] as const) if (partial[s]) out.push(parseServiceLogLine(s, partial[s], opts.timestamps ?? false));
    return out;
  }
}

/** `[timestamp ]details message`, details being `k=v,k=v` with the task's id among them. */
export function parseServiceLogLine(stream: 'stdout' | 'stderr', raw: string, timestamps: boolean): ServiceLogEntry {
  let rest = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  let timestamp: string | undefined;
  if (timestamps && /^\d{4}-\d\d-\d\dT\S+ /.test(rest)) {
    const sp = rest.indexOf(' ');
    timestamp = rest.slice(0, sp);
    rest = rest.slice(sp + 1);
  }
  let taskId: string | null = null;
  const sp = rest.indexOf(' ');
  const details = sp < 0 ? rest : rest.slice(0, sp);
  if (details.includes('com.docker.swarm.')) {
    taskId = /com\.docker\.swarm\.task\.id=([^,\s]+)/.exec(details)?.[1] ?? null;
    rest = sp < 0 ? '' : rest.slice(sp + 1);
  }
  return { stream, line: rest, taskId, ...(timestamp ? { timestamp } : {}) };
}
