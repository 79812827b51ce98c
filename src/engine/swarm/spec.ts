/**
 * A plan's application as a Docker Swarm service spec: the planned container's image,
 * environment, command, labels, named volumes, health check and limits, with Coolify's deploy
 * section (replicated, start-first update and rollback, restart on any exit) and the placement
 * the application asks for. Pure: the kind (index.ts) sends it.
 */
import type { ContainerSpec } from '../../core/model/container-spec.js';
import type { ServiceSpec } from '../docker/swarm.js';
import type { Plan } from '../plan.js';
import { LABEL_MANAGED, LABEL_RESOURCE } from '../plan.js';

const NS_PER_S = 1_000_000_000;

/** Coolify's swarm deploy section: one task at a time, the new one started before the old stops. */
export const UPDATE_CONFIG = { Parallelism: 1, Delay: 0, FailureAction: 'rollback', Monitor: 5 * NS_PER_S, Order: 'start-first' } as const;
export const ROLLBACK_CONFIG = { Parallelism: 1, Delay: 0, FailureAction: 'pause', Monitor: 5 * NS_PER_S, Order: 'start-first' } as const;
/** Coolify's restart policy of a swarm service: any exit, 5 s apart, 10 attempts per 120 s. */
const RESTART_POLICY = { Condition: 'any', Delay: 5 * NS_PER_S, MaxAttempts: 10, Window: 120 * NS_PER_S } as const;

/** The container settings a swarm service has no place for (said in the deployment's log, never silently dropped). */
const NOT_ON_SWARM: (keyof ContainerSpec)[] = ['privileged', 'devices', 'pidMode', 'ipcMode', 'utsMode', 'usernsMode', 'securityOpt', 'binds', 'shmSize', 'tmpfs', 'ulimits'];

/** Why a plan cannot run as one swarm service (null: it can). */
export function swarmPlanRefusal(plan: Plan): string | null {
  if (plan.containers.length !== 1 || !plan.swarm) {
    return 'Only applications run on a swarm destination in berth: services (compose) and databases run on a standalone destination.';
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

export function serviceSpec(plan: Plan, opts: { replicas?: number; forceUpdate?: number } = {}): ServiceSpec {
  const c = plan.containers[0]!;
  const s = c.spec;
  const swarm = plan.swarm ?? { replicas: 1, placement: null };
  const h = s.healthcheck;
  const l = s.limits;
  const limits = { ...(l?.nanoCpus ? { NanoCPUs: l.nanoCpus } : {}), ...(l?.memory ? { MemoryBytes: l.memory } : {}) };
  const reservations = l?.memoryReservation ? { MemoryBytes: l.memoryReservation } : {};
  return {
    Name: c.name,
    Labels: { [LABEL_MANAGED]: 'true', [LABEL_RESOURCE]: s.labels?.[LABEL_RESOURCE] ?? c.name },
    TaskTemplate: {
      ContainerSpec: {
        Image: s.image,
        // The container's labels carry berth's own: the watcher follows the tasks' containers by them.
        Labels: s.labels ?? {},
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
      RestartPolicy: { ...RESTART_POLICY },
      ...(swarm.placement ? { Placement: swarm.placement } : {}),
      Networks: [{ Target: plan.network, Aliases: [] }],
      ...(opts.forceUpdate ? { ForceUpdate: opts.forceUpdate } : {}),
    },
    Mode: { Replicated: { Replicas: opts.replicas ?? swarm.replicas } },
    UpdateConfig: { ...UPDATE_CONFIG },
    RollbackConfig: { ...ROLLBACK_CONFIG },
    EndpointSpec: {
      Mode: 'vip',
      Ports: (s.ports ?? [])
        .filter((p) => p.hostPort !== undefined)
        .map((p) => ({ Protocol: p.protocol ?? 'tcp', TargetPort: p.containerPort, PublishedPort: p.hostPort, PublishMode: 'ingress' as const })),
    },
  };
}
