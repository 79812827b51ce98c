import fs from 'node:fs/promises';
import path from 'node:path';
import { BerthError } from '../errors.js';
import { parseCompose, type ComposeContainer } from '../core/compose.js';
import { DEFAULT_COMPOSE_LOCATION, type ApplicationConfig, type BuildSource } from '../core/model/application.js';
import { atomically } from '../store/atomic.js';
import { nowIso, type Db } from '../store/db.js';
import { contextTar, type BuildContext } from './build-source.js';
import type { EngineClient } from './engine-client.js';

/**
 * A dockercompose application's build (build_pack "dockercompose"): the repository's compose file
 * is read at each deploy, parsed as a service's (core/compose.ts: the same rules and host
 * isolation), its `build:` services built on the server's engine from the repository, and the
 * result recorded as the application's compose (planned then as a service's containers,
 * `<uuid>-<name>`). Images of the other services are pulled by the deploy as a service's are.
 * Nothing is recorded unless every build succeeded: a failure leaves the running containers alone.
 */
export interface ComposeBuildArgs {
  db: Db;
  resourceId: number;
  /** The application's uuid and the deployment's: the built images' repository and tag. */
  uuid: string;
  deploymentUuid: string;
  source: Extract<BuildSource, { git_repository: string }>;
  context: BuildContext;
  engine: EngineClient;
  log: (line: string) => Promise<void>;
  signal: AbortSignal;
}

const rel = (p: string) => p.replace(/^\/+/, '');

/** The image a built compose service runs, per deployment (so a failed build changes nothing recorded). */
export const composeImage = (uuid: string, service: string, deploymentUuid: string) => `localhost/berth-app-${uuid}-${service}:${deploymentUuid}`;

export async function buildComposeApplication(a: ComposeBuildArgs): Promise<void> {
  const location = a.source.docker_compose_location ?? DEFAULT_COMPOSE_LOCATION;
  const file = path.join(a.context.dir, rel(location));
  const shown = path.posix.join(a.source.base_directory, rel(location));
  const text = await fs.readFile(file, 'utf8').catch(() => {
    throw new Error(`The repository has no ${shown} on branch ${a.source.git_branch} (docker_compose_location, relative to base_directory).`);
  });
  let parsed: ReturnType<typeof parseCompose>;
  try {
    parsed = parseCompose(text, { build: true });
  } catch (err) {
    if (err instanceof BerthError && err.kind === 'validation') {
      const problems = Object.values(err.details.errors ?? {}).flat();
      throw new Error(`The compose file ${shown} is refused:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    }
    throw err;
  }
  const host = await a.db
    .selectFrom('resources as r')
    .innerJoin('destinations as d', 'd.id', 'r.destination_id')
    .innerJoin('servers as s', 's.id', 'd.server_id')
    .select('s.host_access')
    .where('r.id', '=', a.resourceId)
    .executeTakeFirstOrThrow();
  if (parsed.hostReach.length && host.host_access !== 1) throw new Error(`The compose file ${shown} reaches into the host:\n${parsed.hostReach.map((p) => `  ${p}`).join('\n')}`);
  await a.log(`compose file ${shown}: ${parsed.containers.map((k) => `${k.name} (${k.build ? 'built from the repository' : k.image})`).join(', ')}`);
  const composeDir = path.dirname(file);
  const containers: ComposeContainer[] = [];
  for (const k of parsed.containers) {
    if (!k.build) {
      containers.push(k);
      continue;
    }
    // Compose reads a context relative to the compose file; the parser refused ".." and absolute paths.
    const dir = path.join(composeDir, k.build.context);
    const isDir = await fs.stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir) throw new Error(`services.${k.name}.build: the repository has no directory ${k.build.context} next to ${shown}.`);
    if (!(await fs.stat(path.join(dir, k.build.dockerfile)).catch(() => null))?.isFile()) throw new Error(`services.${k.name}.build: there is no ${k.build.dockerfile} in ${k.build.context}.`);
    const tag = composeImage(a.uuid, k.name, a.deploymentUuid);
    await a.log(`building ${k.name} from ${k.build.context} (${k.build.dockerfile})`);
    await buildStreamed(a.engine, dir, k.build.dockerfile, tag, a.log, a.signal);
    await a.log(`built ${tag}`);
    containers.push({ ...k, image: tag });
  }
  // Only the compose and the tag change: other fields patched meanwhile stay.
  await atomically(a.db, async (db) => {
    const now = await db.selectFrom('resources').select('config').where('id', '=', a.resourceId).executeTakeFirstOrThrow();
    const c = JSON.parse(now.config) as ApplicationConfig;
    c.compose = { docker_compose_raw: parsed.yaml, containers, volumes: parsed.volumes, commit: a.context.commit };
    // The tag marks it built (a start before any deploy is a deploy); its images are the compose's.
    c.docker_registry_image_tag = a.deploymentUuid;
    await db
      .updateTable('resources')
      .set({ config: JSON.stringify(c), updated_at: nowIso() })
      .where('id', '=', a.resourceId)
      .execute();
  });
}

/** A build whose output reaches the deployment's log in batches of lines. */
async function buildStreamed(engine: EngineClient, dir: string, dockerfile: string, tag: string, log: (line: string) => Promise<void>, signal: AbortSignal): Promise<void> {
  let pending: string[] = [];
  let writing = Promise.resolve();
  const flush = () => {
    const lines = pending;
    pending = [];
    if (lines.length) writing = writing.then(() => log(lines.join('\n')));
  };
  try {
    await engine.build(contextTar(dir), { tag, dockerfile, signal, onLine: (l) => (pending.push(l), pending.length >= 25 && flush()) });
  } finally {
    flush();
    await writing;
  }
}
