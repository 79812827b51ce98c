/** The parts of an engine's container inspect these rules read (Docker's and podman's shape). */
export interface InspectLike {
  State: { Status?: string; Running?: boolean; Paused?: boolean; Restarting?: boolean; ExitCode: number; StartedAt?: string; FinishedAt?: string; Health?: { Status: string } | null };
  RestartCount?: number;
  Config: object;
  HostConfig: { RestartPolicy?: { Name: string } };
}

/**
 * What one container is doing, read from the engine's inspect: the words berth reports and
 * stores. Pure functions, so the rules can be read (and tested) apart from the watcher.
 */
export interface ContainerObservation {
  /** running, restarting, exited (also: never started, removed), paused. */
  state: 'running' | 'restarting' | 'exited' | 'paused';
  /** The engine's health (null: the container has no health check). */
  health: 'healthy' | 'unhealthy' | 'starting' | null;
  restarts: number;
  /** The last exit code the engine reported (null: none seen). */
  exit_code: number | null;
  started_at: string | null;
}

/**
 * A container its restart policy started again this recently is restarting, not running: a
 * crash loop shows `running` in most inspects (podman restarts at once), and only its restart
 * count and start time give it away.
 */
export const RESTART_WINDOW_MS = 30_000;

/** Whether a container declares a health check (`NONE` disables an image's own). */
export const hasHealthcheck = (c: Pick<InspectLike, 'Config'>): boolean => {
  const test = (c.Config as { Healthcheck?: { Test?: string[] | null } | null }).Healthcheck?.Test;
  return Array.isArray(test) && test.length > 0 && test[0] !== 'NONE';
};

/**
 * `wanted` is what berth last asked for: a container that is down while the resource should be
 * stopped is exited; down (or just restarted) while it should run, with a policy that restarts
 * it, is restarting.
 */
export function observeContainer(c: InspectLike, wanted: 'running' | 'exited', now = Date.now()): ContainerObservation {
  const s = c.State;
  const restarts = c.RestartCount ?? 0;
  const policy = c.HostConfig.RestartPolicy?.Name ?? 'no';
  const restartsItself = policy === 'always' || policy === 'unless-stopped' || (policy === 'on-failure' && s.ExitCode !== 0);
  const recent = (at: string | undefined) => Boolean(at) && !at!.startsWith('0001-') && now - Date.parse(at!) < RESTART_WINDOW_MS;
  const running = s.Running === true || s.Status === 'running';
  const raw = s.Health?.Status;
  const health = hasHealthcheck(c) ? (raw === 'healthy' || raw === 'unhealthy' ? raw : 'starting') : null;
  let state: ContainerObservation['state'];
  if (s.Paused) state = 'paused';
  else if (s.Restarting === true) state = 'restarting';
  else if (running) state = restarts > 0 && restartsItself && recent(s.StartedAt) ? 'restarting' : 'running';
  else state = wanted === 'running' && restartsItself && restarts > 0 && (recent(s.FinishedAt) || recent(s.StartedAt)) ? 'restarting' : 'exited';
  // A running container's ExitCode is its previous run's at best (podman says 0): the watcher
  // fills it from the engine's die events instead.
  return { state, health, restarts, exit_code: running ? null : s.ExitCode, started_at: s.StartedAt && !s.StartedAt.startsWith('0001-') ? s.StartedAt : null };
}

/** A container berth planned that the engine does not have. */
export const MISSING: ContainerObservation = { state: 'exited', health: null, restarts: 0, exit_code: null, started_at: null };

export interface ResourceObservation {
  /** Coolify's words: `running:healthy`, `running:unhealthy`, `running:unknown`, `running:starting`, `restarting:unknown`, `degraded:unhealthy`, `exited`, `paused:unknown`, `unreachable:unknown`. */
  status: string;
  restart_count: number;
  last_exit_code: number | null;
  containers: Record<string, ContainerObservation>;
}

const HEALTH_ORDER = ['unhealthy', 'starting', 'unknown', 'healthy'] as const;

/** The worst health among running containers: one unhealthy one makes the resource unhealthy. */
function worstHealth(obs: ContainerObservation[]): (typeof HEALTH_ORDER)[number] {
  const words = obs.map((o) => o.health ?? 'unknown');
  return HEALTH_ORDER.find((h) => words.includes(h)) ?? 'unknown';
}

/** One resource's status from its containers' (by planned name; a missing one is MISSING). */
export function aggregate(containers: Record<string, ContainerObservation>, previousExitCode: number | null = null): ResourceObservation {
  const all = Object.values(containers);
  const running = all.filter((o) => o.state === 'running');
  const restarting = all.filter((o) => o.state === 'restarting');
  let status: string;
  if (all.length > 0 && running.length === all.length) status = `running:${worstHealth(running)}`;
  else if (running.length > 0) status = 'degraded:unhealthy';
  else if (restarting.length > 0) status = 'restarting:unknown';
  else if (all.some((o) => o.state === 'paused')) status = 'paused:unknown';
  else status = 'exited';
  const codes = all.filter((o) => o.exit_code !== null);
  return {
    status,
    restart_count: all.reduce((n, o) => n + o.restarts, 0),
    last_exit_code: codes.length ? codes[codes.length - 1]!.exit_code : previousExitCode,
    containers,
  };
}

/** The observation columns of a resource that moved: what was seen where it was says nothing about where it is. */
export const NOT_OBSERVED = { observed_status: null, observed: null, observed_at: null, restart_count: null, last_exit_code: null } as const;

/** What a resource on a server berth cannot reach reports: it says so instead of its last word. */
export const UNREACHABLE_STATUS = 'unreachable:unknown';
