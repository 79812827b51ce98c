import { composePort, type ComposeContainer } from './compose.js';
import type { HostSettings } from './host-access.js';

/**
 * What of a compose service a swarm service has no place for, by its compose key and why: a
 * compose file on a swarm destination runs as a stack (`docker stack deploy`), and these keys
 * would be dropped there, so they are refused instead. One check for the two forms it is made on:
 * a parsed compose service at create and update (core), a planned container at deploy (the swarm
 * kind), whatever door the file came through. See docs/decisions/swarm.md.
 */
export interface SwarmFitSettings extends Omit<HostSettings, 'binds' | 'capAdd'> {
  /** Bind mounts, in either form (compose's objects, Docker's strings): only their number counts. */
  binds?: readonly unknown[];
  /** Published ports; an address to publish on is what counts. */
  ports?: readonly { hostIp?: string; hostPort?: number }[];
  /** deploy.endpoint_mode: dnsrr publishes nothing through the ingress mesh. */
  endpointMode?: 'vip' | 'dnsrr';
}

export interface SwarmMisfit {
  key: 'privileged' | 'devices' | 'network_mode' | 'pid' | 'ipc' | 'uts' | 'userns_mode' | 'security_opt' | 'volumes' | 'ports' | 'deploy';
  why: string;
}

const set = (v: string | null | undefined) => v !== undefined && v !== null && v !== '';

export function swarmMisfits(s: SwarmFitSettings): SwarmMisfit[] {
  const out: SwarmMisfit[] = [];
  if (s.privileged) out.push({ key: 'privileged', why: 'a swarm service cannot run privileged' });
  if (s.devices?.length) out.push({ key: 'devices', why: 'a swarm service cannot map host devices' });
  if (set(s.networkMode)) out.push({ key: 'network_mode', why: "a swarm service joins the stack's overlay network; it has no network mode" });
  if (set(s.pidMode)) out.push({ key: 'pid', why: 'a swarm service has no PID namespace setting' });
  if (set(s.ipcMode)) out.push({ key: 'ipc', why: 'a swarm service has no IPC namespace setting' });
  if (set(s.utsMode)) out.push({ key: 'uts', why: 'a swarm service has no UTS namespace setting' });
  if (set(s.usernsMode)) out.push({ key: 'userns_mode', why: 'a swarm service has no user namespace setting' });
  if (s.securityOpt?.length) out.push({ key: 'security_opt', why: 'a swarm service takes no security options' });
  if (s.binds?.length) out.push({ key: 'volumes', why: 'a bind mount names a path of one node and a task may run on any node: use a named volume' });
  if (s.ports?.some((p) => set(p.hostIp))) out.push({ key: 'ports', why: 'swarm publishes a port on every node through its ingress mesh, not on one address: leave the address out' });
  if (s.endpointMode === 'dnsrr' && s.ports?.some((p) => p.hostPort !== undefined))
    out.push({ key: 'deploy', why: 'endpoint_mode dnsrr cannot publish ports through the ingress mesh: use vip, or publish nothing' });
  return out;
}

/** The misfits of a compose file's services as `services.<name>.<key>: why` lines (empty: it runs as a stack). */
export function swarmComposeProblems(services: readonly { name: string; settings: SwarmFitSettings }[]): string[] {
  return services.flatMap(({ name, settings }) => swarmMisfits(settings).map((m) => `services.${name}.${m.key}: ${m.why} (on a swarm destination the compose file runs as a stack).`));
}

/** A parsed compose file's misfits (create and update of a service on a swarm destination). */
export const composeSwarmProblems = (containers: readonly ComposeContainer[]): string[] =>
  swarmComposeProblems(containers.map((k) => ({ name: k.name, settings: { ...k, ports: k.ports.map(composePort) } })));
