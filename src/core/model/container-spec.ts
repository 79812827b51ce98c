import type { HostSettings } from '../host-access.js';

/**
 * The subset of the Docker Engine API's shapes that berth reads and writes. Engines send more
 * fields than these; the index signatures keep them reachable without pretending to type them.
 */

export interface TlsClientOptions {
  /** PEM of the CA that signed the engine's certificate (when not a public CA). */
  ca?: string;
  /** PEM client certificate and key (Docker's `--tlsverify` client auth). */
  cert?: string;
  key?: string;
  /** Server name to verify the certificate against; defaults to the endpoint's host. */
  servername?: string;
  /** Defaults to true; false only for tests against self-signed certificates. */
  rejectUnauthorized?: boolean;
}

export interface VersionInfo {
  Version: string;
  ApiVersion: string;
  MinAPIVersion?: string;
  Os?: string;
  Arch?: string;
  KernelVersion?: string;
  Components?: { Name: string; Version: string; Details?: Record<string, unknown> }[];
  [key: string]: unknown;
}

export interface ImageInspect {
  Id: string;
  RepoTags?: string[] | null;
  RepoDigests?: string[] | null;
  Created?: string;
  Size?: number;
  Config?: { Env?: string[] | null; Cmd?: string[] | null; Entrypoint?: string[] | null; Labels?: Record<string, string> | null; [key: string]: unknown };
  [key: string]: unknown;
}

export interface VolumeInfo {
  Name: string;
  Driver: string;
  Mountpoint: string;
  Labels: Record<string, string> | null;
  Scope?: string;
  CreatedAt?: string;
  Options?: Record<string, string> | null;
  [key: string]: unknown;
}

export interface NetworkInfo {
  Id: string;
  Name: string;
  Driver: string;
  Internal?: boolean;
  Labels?: Record<string, string> | null;
  Containers?: Record<string, unknown> | null;
  [key: string]: unknown;
}

export interface MountPoint {
  Type: string;
  Name?: string;
  Source: string;
  Destination: string;
  RW: boolean;
  [key: string]: unknown;
}

export interface ContainerState {
  Status: 'created' | 'running' | 'paused' | 'restarting' | 'removing' | 'exited' | 'dead' | string;
  Running: boolean;
  Paused?: boolean;
  Restarting?: boolean;
  OOMKilled?: boolean;
  Dead?: boolean;
  Pid?: number;
  ExitCode: number;
  Error?: string;
  StartedAt?: string;
  FinishedAt?: string;
  Health?: { Status: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface ContainerInspect {
  Id: string;
  Name: string;
  Created?: string;
  Image: string;
  State: ContainerState;
  RestartCount?: number;
  Config: {
    Image: string;
    Env?: string[] | null;
    Cmd?: string[] | null;
    Entrypoint?: string[] | string | null;
    Labels?: Record<string, string> | null;
    Tty?: boolean;
    User?: string;
    WorkingDir?: string;
    ExposedPorts?: Record<string, unknown> | null;
    [key: string]: unknown;
  };
  HostConfig: {
    NetworkMode?: string;
    Binds?: string[] | null;
    PortBindings?: Record<string, { HostIp?: string; HostPort?: string }[] | null> | null;
    RestartPolicy?: { Name: string; MaximumRetryCount?: number };
    [key: string]: unknown;
  };
  Mounts: MountPoint[];
  NetworkSettings?: { Networks?: Record<string, unknown> | null; Ports?: Record<string, unknown> | null; [key: string]: unknown };
  [key: string]: unknown;
}

export interface ContainerSummary {
  Id: string;
  Names: string[];
  Image: string;
  State: string;
  Status: string;
  Labels: Record<string, string> | null;
  Created?: number;
  [key: string]: unknown;
}

export interface PortBinding {
  containerPort: number;
  protocol?: 'tcp' | 'udp' | 'sctp';
  /** Omit to let the engine pick a free host port. */
  hostPort?: number;
  hostIp?: string;
}

export interface VolumeMountSpec {
  /** Name of a named volume (created by the engine when missing). */
  volume: string;
  /** Absolute path inside the container. */
  target: string;
  readOnly?: boolean;
  /** Do not copy the image's content at `target` into an empty volume (Docker's VolumeOptions.NoCopy). */
  noCopy?: boolean;
}

export interface RestartPolicy {
  name: 'no' | 'always' | 'unless-stopped' | 'on-failure';
  maximumRetryCount?: number;
}

/** A container's stop grace when its spec names none (Docker's default; berth's stop waits as long). */
export const DEFAULT_STOP_TIMEOUT_S = 10;

/** Host-reaching settings are checked by core/host-access.ts before any container is made. */
export interface ContainerSpec extends HostSettings {
  image: string;
  cmd?: string[];
  entrypoint?: string[];
  /** `KEY=value` entries, Docker's form. */
  env?: string[];
  labels?: Record<string, string>;
  ports?: PortBinding[];
  /** Named volumes, sent as `HostConfig.Mounts` of type `volume`. */
  volumes?: VolumeMountSpec[];
  /** Raw `HostConfig.Binds` (`name:/path[:ro]`), for callers that already have Docker's syntax. */
  binds?: string[];
  /** `none`, `host`, `bridge`, or a network name. Omitted: the engine's default (bridge on Docker and on podman's Docker API). */
  networkMode?: string;
  /** Aliases on `networkMode` when it is a user-defined network. */
  networkAliases?: string[];
  restartPolicy?: RestartPolicy;
  user?: string;
  workingDir?: string;
  tty?: boolean;
  stopTimeoutS?: number;
  /** Capabilities dropped (confines further; never host-reaching). */
  capDrop?: string[];
  /** Docker's Healthcheck: `test` in its Test form (["CMD-SHELL", "…"], ["CMD", …], ["NONE"] disables). */
  healthcheck?: { test: string[]; intervalS?: number; timeoutS?: number; retries?: number; startPeriodS?: number };
  /** Resource limits (HostConfig): bytes, CPUs in billionths, a cpuset such as "0-1". */
  limits?: { memory?: number; memorySwap?: number; memorySwappiness?: number; memoryReservation?: number; nanoCpus?: number; cpusetCpus?: string; cpuShares?: number };
  /** Run an init process as PID 1 (`--init`; the engine needs its init binary, catatonit on podman). */
  init?: boolean;
  ulimits?: { name: string; soft: number; hard: number }[];
  hostname?: string;
  /** tmpfs mounts: container path → mount options (`size=64m`); count against the memory limit. */
  tmpfs?: Record<string, string>;
  /** Size of /dev/shm in bytes. */
  shmSize?: number;
}

/** `X-Docker-Container-Path-Stat` of the archive endpoints. */
export interface PathStat {
  name: string;
  size: number;
  /** Unix permission bits (with setuid/setgid/sticky), converted from Go's os.FileMode. */
  mode: number;
  mtime: string;
  isDir: boolean;
  linkTarget: string;
}

export interface LogEntry {
  stream: 'stdout' | 'stderr';
  line: string;
  /** When requested with `timestamps`: the engine's RFC 3339 timestamp of the line. */
  timestamp?: string;
}

export interface WaitResult {
  StatusCode: number;
  Error?: { Message: string } | null;
}
