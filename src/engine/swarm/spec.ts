/**
 * A plan's application as a Docker Swarm service spec: the planned container's image,
 * environment, command, labels, named volumes, health check and limits, with Coolify's deploy
 * section (replicated, start-first update and rollback, restart on any exit) and the placement
 * the application asks for. Pure: the kind (index.ts) sends it.
 */
import type { ContainerSpec } from '../../core/model/container-spec.js';
import type { SwarmPlacement } from '../../core/swarm-fields.js';
import type { ServiceSpec } from '../docker/swarm.js';
import type { Plan } from '../plan.js';
import { LABEL_MANAGED, LABEL_RESOURCE } from '../plan.js';

const NS_PER_S = 1_000_000_000;

/** Coolify's swarm deploy section: one task at a time, the new one started before the old stops. */
export const UPDATE_CONFIG = { Parallelism: 1, Delay: 0, FailureAction: 'rollback', Monitor: 5 * NS_PER_S, Order: 'start-first' } as const;
export const ROLLBACK_CONFIG = { Parallelism: 1, Delay: 0, FailureAction: 'pause', Monitor: 5 * NS_PER_S, Order: 'start-first' } as const;
/** Coolify's restart policy of a swarm service: any exit, 5 s apart, 10 attempts per 120 s. */
export const RESTART_POLICY = { Condition: 'any', Delay: 5 * NS_PER_S, MaxAttempts: 10, Window: 120 * NS_PER_S } as const;

/** The container settings a swarm service has no place for (said in the deployment's log, never silently dropped). */
const NOT_ON_SWARM: (keyof ContainerSpec)[] = ['privileged', 'devices', 'pidMode', 'ipcMode', 'utsMode', 'usernsMode', 'securityOpt', 'binds', 'shmSize', 'tmpfs', 'ulimits'];

/** Why a plan that is not a compose file's cannot run as one swarm service (null: it can). */
export function swarmPlanRefusal(plan: Plan): string | null {
  if (plan.containers.length !== 1 || !plan.swarm) {
    return 'Only applications and services (compose, as a stack) run on a swarm destination in berth: databases run on a standalone destination.';
  }
  return null;
}

/** What of the planned container the service leaves out (for the deployment's log). */
export function unappliedSettings(spec: ContainerSpec): string[] {
  return NOT_ON_SWARM.filter((k) => {
    const v = spec[k];
    return v !== undefined && v !== null && v !== false && !(Array.isArray(v) && v.length === 0) && !(typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);
  });
}

/** One swarm service of a container spec: what an application's service and each service of a stack are made of. */
export interface ServiceShape {
  name: string;
  spec: ContainerSpec;
  network: string;
  /** Names the service is also found by on the network (a stack's compose service names). */
  aliases?: string[];
  replicas: number;
  placement?: SwarmPlacement | null;
  /** The service's own labels (berth's, the stack's namespace); the tasks' containers carry the spec's. */
  labels: Record<string, string>;
  /** Added to the tasks' containers' labels (a stack's namespace). */
  containerLabels?: Record<string, string>;
  restart?: NonNullable<ServiceSpec['TaskTemplate']['RestartPolicy']>;
  /** vip (Docker's default: one virtual address, balanced by the node) or dnsrr (the name resolves to the tasks). */
  endpointMode?: 'vip' | 'dnsrr';
  forceUpdate?: number;
}

export function serviceSpec(plan: Plan, opts: { replicas?: number; forceUpdate?: number } = {}): ServiceSpec {
  const c = plan.containers[0]!;
  const swarm = plan.swarm ?? { replicas: 1, placement: null };
  return specOf({
    name: c.name,
    spec: c.spec,
    network: plan.network,
    replicas: opts.replicas ?? swarm.replicas,
    placement: swarm.placement,
    labels: { [LABEL_MANAGED]: 'true', [LABEL_RESOURCE]: c.spec.labels?.[LABEL_RESOURCE] ?? c.name },
    ...(opts.forceUpdate ? { forceUpdate: opts.forceUpdate } : {}),
  });
}

export function specOf(o: ServiceShape): ServiceSpec {
  const s = o.spec;
  const h = s.healthcheck;
  const l = s.limits;
  const limits = { ...(l?.nanoCpus ? { NanoCPUs: l.nanoCpus } : {}), ...(l?.memory ? { MemoryBytes: l.memory } : {}) };
  const reservations = l?.memoryReservation ? { MemoryBytes: l.memoryReservation } : {};
  return {
    Name: o.name,
    Labels: o.labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: s.image,
        // The container's labels carry berth's own: the watcher follows the tasks' containers by them.
        Labels: { ...(s.labels ?? {}), ...(o.containerLabels ?? {}) },
        Env: s.env ?? [],
        // Swarm's Command replaces the entrypoint and Args the command, as `docker run` does.
        ...(s.entrypoint?.length ? { Command: s.entrypoint } : {}),
        ...(s.cmd && (s.cmd.length || s.entrypoint?.length) ? { Args: s.cmd } : {}),
        ...(s.user ? { User: s.user } : {}),
        ...(s.workingDir ? { Dir: s.workingDir } : {}),
        ...(s.hostname ? { Hostname: s.hostname } : {}),
        ...(s.tty ? { TTY: true } : {}),
        ...(s.init ? { Init: true } : {}),
        ...(s.capAdd?.length ? { CapabilityAdd: s.capAdd } : {}),
        ...(s.capDrop?.length ? { CapabilityDrop: s.capDrop } : {}),
        ...(s.stopTimeoutS !== undefined ? { StopGracePeriod: s.stopTimeoutS * NS_PER_S } : {}),
        Mounts: (s.volumes ?? []).map((v) => ({ Type: 'volume', Source: v.volume, Target: v.target, ReadOnly: v.readOnly ?? false })),
        ...(h
          ? {
              Healthcheck: {
                Test: h.test,
                ...(h.intervalS ? { Interval: h.intervalS * NS_PER_S } : {}),
                ...(h.timeoutS ? { Timeout: h.timeoutS * NS_PER_S } : {}),
                ...(h.retries ? { Retries: h.retries } : {}),
                ...(h.startPeriodS ? { StartPeriod: h.startPeriodS * NS_PER_S } : {}),
              },
            }
          : {}),
      },
      Resources: { Limits: limits, Reservations: reservations },
      RestartPolicy: o.restart ?? { ...RESTART_POLICY },
      ...(o.placement ? { Placement: o.placement } : {}),
      Networks: [{ Target: o.network, Aliases: o.aliases ?? [] }],
      ...(o.forceUpdate ? { ForceUpdate: o.forceUpdate } : {}),
    },
    Mode: { Replicated: { Replicas: o.replicas } },
    UpdateConfig: { ...UPDATE_CONFIG },
    RollbackConfig: { ...ROLLBACK_CONFIG },
    EndpointSpec: {
      Mode: o.endpointMode ?? 'vip',
      Ports: (s.ports ?? [])
        .filter((p) => p.hostPort !== undefined)
        .map((p) => ({ Protocol: p.protocol ?? 'tcp', TargetPort: p.containerPort, PublishedPort: p.hostPort, PublishMode: 'ingress' as const })),
    },
  };
}
