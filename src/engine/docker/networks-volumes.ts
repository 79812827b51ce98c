/** The Engine API's networks and volumes. */
import { NotFoundError } from '../engine-errors.js';
import type { NetworkInfo, VolumeInfo } from '../../core/model/container-spec.js';

import { type CallOptions, type Filters, filtersParam, id, labelFilter } from './transport.js';
import { ImagesApi } from './images.js';

export class NetworksVolumesApi extends ImagesApi {
  // ---------------------------------------------------------------- networks

  async createNetwork(name: string, opts: CallOptions & { driver?: string; labels?: Record<string, string>; internal?: boolean; attachable?: boolean } = {}): Promise<{ Id: string }> {
    return this.json<{ Id: string }>({
      method: 'POST',
      path: '/networks/create',
      json: {
        Name: name,
        Driver: opts.driver ?? 'bridge',
        Labels: opts.labels ?? {},
        Internal: opts.internal ?? false,
        Attachable: opts.attachable ?? false,
        CheckDuplicate: true,
      },
      signal: opts.signal,
    });
  }

  async inspectNetwork(nameOrId: string, opts: CallOptions = {}): Promise<NetworkInfo> {
    return this.json<NetworkInfo>({ method: 'GET', path: `/networks/${id(nameOrId)}`, signal: opts.signal });
  }

  /** Resolves true when removed, false when there was no such network. */
  async removeNetwork(nameOrId: string, opts: CallOptions = {}): Promise<boolean> {
    const status = await this.empty({ method: 'DELETE', path: `/networks/${id(nameOrId)}`, accept: [404], signal: opts.signal });
    return status !== 404;
  }

  /** `POST /networks/{id}/connect`: one more network for a container (Docker creates on one only). */
  async connectNetwork(network: string, container: string, opts: CallOptions = {}): Promise<void> {
    await this.empty({ method: 'POST', path: `/networks/${id(network)}/connect`, json: { Container: container }, idempotent: false, signal: opts.signal });
  }

  /** `POST /networks/{id}/disconnect`; false when the container or network is gone (404). */
  async disconnectNetwork(network: string, container: string, opts: CallOptions = {}): Promise<boolean> {
    return (await this.empty({ method: 'POST', path: `/networks/${id(network)}/disconnect`, json: { Container: container, Force: true }, accept: [404], signal: opts.signal })) !== 404;
  }

  async listNetworks(opts: CallOptions = {}): Promise<NetworkInfo[]> {
    return this.json<NetworkInfo[]>({ method: 'GET', path: '/networks', signal: opts.signal });
  }

  // ---------------------------------------------------------------- volumes

  async createVolume(name: string, opts: CallOptions & { labels?: Record<string, string>; driver?: string } = {}): Promise<VolumeInfo> {
    return this.json<VolumeInfo>({
      method: 'POST',
      path: '/volumes/create',
      json: { Name: name, Driver: opts.driver ?? 'local', Labels: opts.labels ?? {} },
      signal: opts.signal,
    });
  }

  async inspectVolume(name: string, opts: CallOptions = {}): Promise<VolumeInfo> {
    return this.json<VolumeInfo>({ method: 'GET', path: `/volumes/${id(name)}`, signal: opts.signal });
  }

  /** Resolves true when removed, false when there was no such volume. 409 (in use) throws ConflictError. */
  async removeVolume(name: string, opts: CallOptions & { force?: boolean } = {}): Promise<boolean> {
    // A forced removal answers 204 for a volume the engine does not have (Docker and podman
    // alike), and delete would report removing it: ask first.
    if (opts.force) {
      try {
        await this.inspectVolume(name, opts);
      } catch (err) {
        if (err instanceof NotFoundError) return false;
        throw err;
      }
    }
    const status = await this.empty({
      method: 'DELETE',
      path: `/volumes/${id(name)}`,
      query: { force: opts.force || undefined },
      accept: [404],
      signal: opts.signal,
    });
    return status !== 404;
  }

  async listVolumes(opts: CallOptions & { labels?: Record<string, string | true> | string[]; name?: string[]; dangling?: boolean } = {}): Promise<VolumeInfo[]> {
    const filters: Filters = { label: labelFilter(opts.labels), name: opts.name ?? [] };
    if (opts.dangling !== undefined) filters.dangling = [String(opts.dangling)];
    const res = await this.json<{ Volumes: VolumeInfo[] | null }>({
      method: 'GET',
      path: '/volumes',
      query: { filters: filtersParam(filters) },
      signal: opts.signal,
    });
    return res.Volumes ?? [];
  }
}
