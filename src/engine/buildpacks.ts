import fs from 'node:fs/promises';
import path from 'node:path';
import type { BuildpackImages, BuildSteps } from '../core/model/application.js';

/**
 * Coolify's build packs without a Dockerfile in the repository (nixpacks, static): berth looks at
 * the repository's files and writes the Dockerfile itself, which the deployment's log keeps whole
 * so a person can read what ran. The detection is nixpacks' in spirit (the stack from the files
 * at the root), not its output: a plain Dockerfile on the settings' base images.
 */
export interface GeneratedBuild {
  /** What was detected, for the log ("node (npm)", "python (requirements.txt)", "static"). */
  stack: string;
  dockerfile: string;
}

/** The files a detection looks for, named in the failure when none is there. */
export const DETECTED_FILES = ['package.json', 'requirements.txt', 'pyproject.toml', 'go.mod', 'index.html'] as const;

/** Where a static image serves from (nginx's, and the contract of BERTH_BUILDPACK_IMAGES.static). */
const STATIC_ROOT = '/usr/share/nginx/html';

interface PackageJson {
  scripts?: Record<string, unknown>;
  main?: unknown;
}

const exists = (dir: string, f: string) =>
  fs.stat(path.join(dir, f)).then(
    (s) => s.isFile(),
    () => false,
  );

/** The first of `names` that is a file in `dir`. */
async function firstFile(dir: string, names: string[]): Promise<string | undefined> {
  for (const f of names) if (await exists(dir, f)) return f;
  return undefined;
}

/** A shell line in a RUN instruction (one line, checked at the door; read again here). */
function run(cmd: string): string {
  if (/[\r\n]/.test(cmd)) throw new Error('A build step must be a single line.');
  return `RUN ${cmd}`;
}

/** The start command as the image's CMD: through sh, so it reads as the user wrote it. */
const cmd = (line: string) => `CMD ${JSON.stringify(['sh', '-c', line])}`;

const dockerfile = (lines: (string | false | null | undefined)[]) => `${lines.filter((l): l is string => typeof l === 'string').join('\n')}\n`;

/** A relative path inside the context ("" for its root), checked at the door (no ".."). */
const inside = (p: string | null | undefined) => (p ?? '').replace(/^\/+/, '').replace(/\/+$/, '');

interface NodeSetup {
  manager: string;
  install: string;
  run: (script: string) => string;
  /** corepack ships with node's images: it brings pnpm and yarn without a registry of berth's. */
  corepack: boolean;
}

async function nodeSetup(dir: string): Promise<NodeSetup> {
  if (await exists(dir, 'pnpm-lock.yaml')) return { manager: 'pnpm', install: 'pnpm install --frozen-lockfile', run: (s) => `pnpm run ${s}`, corepack: true };
  if (await exists(dir, 'yarn.lock')) return { manager: 'yarn', install: 'yarn install --frozen-lockfile', run: (s) => `yarn run ${s}`, corepack: true };
  const lock = (await exists(dir, 'package-lock.json')) || (await exists(dir, 'npm-shrinkwrap.json'));
  return { manager: 'npm', install: lock ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund', run: (s) => `npm run ${s}`, corepack: false };
}

async function readPackage(dir: string): Promise<PackageJson> {
  try {
    const p = JSON.parse(await fs.readFile(path.join(dir, 'package.json'), 'utf8')) as unknown;
    return p && typeof p === 'object' && !Array.isArray(p) ? (p as PackageJson) : {};
  } catch (err) {
    throw new Error(`package.json is not valid JSON: ${(err as Error).message}`);
  }
}

const hasScript = (p: PackageJson, name: string) => typeof p.scripts?.[name] === 'string';

/** The install and build lines of a Node project (given steps first), for a server or a static site. */
async function nodeBuild(dir: string, steps: BuildSteps): Promise<{ setup: NodeSetup; pkg: PackageJson; lines: string[] }> {
  const setup = await nodeSetup(dir);
  const pkg = await readPackage(dir);
  const build = steps.build_command || (hasScript(pkg, 'build') ? setup.run('build') : null);
  return {
    setup,
    pkg,
    lines: [setup.corepack && !steps.install_command ? 'RUN corepack enable' : null, run(steps.install_command || setup.install), build ? run(build) : null].filter((l): l is string => !!l),
  };
}

async function node(dir: string, steps: BuildSteps, port: string | null, images: BuildpackImages): Promise<GeneratedBuild> {
  const { setup, pkg, lines } = await nodeBuild(dir, steps);
  let start = steps.start_command || (hasScript(pkg, 'start') ? `${setup.manager === 'npm' ? 'npm' : setup.manager} start` : null);
  if (!start && typeof pkg.main === 'string' && /^[A-Za-z0-9._/@+-]+$/.test(pkg.main)) start = `node ${pkg.main}`;
  if (!start) {
    const entry = await firstFile(dir, ['index.js', 'server.js', 'main.js', 'app.js']);
    if (entry) start = `node ${entry}`;
  }
  if (!start) throw new Error('package.json has no "start" script and no "main", and there is no index.js or server.js: give start_command.');
  return {
    stack: `node (${setup.manager})`,
    dockerfile: dockerfile([`FROM ${images.node}`, 'WORKDIR /app', 'COPY . .', ...lines, ...portLines(port), cmd(start)]),
  };
}

async function python(dir: string, steps: BuildSteps, port: string | null, images: BuildpackImages): Promise<GeneratedBuild> {
  const requirements = await exists(dir, 'requirements.txt');
  const install = steps.install_command || (requirements ? 'python -m pip install --no-cache-dir -r requirements.txt' : 'python -m pip install --no-cache-dir .');
  let start = steps.start_command || (await procfileWeb(dir));
  if (!start) {
    const entry = await firstFile(dir, ['main.py', 'app.py', 'server.py']);
    if (entry) start = `python ${entry}`;
  }
  if (!start) throw new Error('No start command for this Python project: give start_command (or a Procfile with a "web:" line, or a main.py or app.py).');
  return {
    stack: `python (${requirements ? 'requirements.txt' : 'pyproject.toml'})`,
    dockerfile: dockerfile([
      `FROM ${images.python}`,
      'WORKDIR /app',
      'ENV PYTHONUNBUFFERED=1',
      'COPY . .',
      run(install),
      steps.build_command ? run(steps.build_command) : null,
      ...portLines(port),
      cmd(start),
    ]),
  };
}

/** A Procfile's `web:` command, as Heroku and nixpacks read it. */
async function procfileWeb(dir: string): Promise<string | null> {
  const text = await fs.readFile(path.join(dir, 'Procfile'), 'utf8').catch(() => '');
  const line = text.split('\n').find((l) => /^web:/.test(l.trim()));
  return line?.trim().slice(4).trim() || null;
}

function go(steps: BuildSteps, port: string | null, images: BuildpackImages): GeneratedBuild {
  return {
    stack: 'go (go.mod)',
    dockerfile: dockerfile([
      `FROM ${images.go}`,
      'WORKDIR /app',
      'COPY . .',
      run(steps.install_command || 'go mod download'),
      run(steps.build_command || 'go build -o /usr/local/bin/app .'),
      ...portLines(port),
      cmd(steps.start_command || '/usr/local/bin/app'),
    ]),
  };
}

/**
 * A static site: the files (or publish_directory) copied into the static image, which serves them
 * on port 80 with its own command. With a package.json, the site is built first in a Node stage.
 */
async function staticSite(dir: string, steps: BuildSteps, images: BuildpackImages): Promise<GeneratedBuild> {
  const publish = inside(steps.publish_directory);
  if (!(await exists(dir, 'package.json')) && !steps.build_command) {
    return { stack: 'static', dockerfile: dockerfile([`FROM ${images.static}`, `COPY ${publish ? `${publish}/` : '.'} ${STATIC_ROOT}/`]) };
  }
  const lines = (await exists(dir, 'package.json'))
    ? (await nodeBuild(dir, steps)).lines
    : [steps.install_command ? run(steps.install_command) : null, run(steps.build_command!)].filter((l): l is string => !!l);
  return {
    stack: 'static (built with node)',
    dockerfile: dockerfile([`FROM ${images.node} AS build`, 'WORKDIR /app', 'COPY . .', ...lines, `FROM ${images.static}`, `COPY --from=build /app/${publish ? `${publish}/` : ''} ${STATIC_ROOT}/`]),
  };
}

/** The port the app is told to listen on (PORT, as nixpacks and most frameworks read it). */
function portLines(port: string | null): string[] {
  const first = port?.split(',')[0]?.trim();
  return first && /^\d{1,5}$/.test(first) ? [`ENV PORT=${first}`, `EXPOSE ${first}`] : [];
}

/**
 * The Dockerfile of a nixpacks or static build of `dir` (the repository's base_directory).
 * Throws, naming what was looked for, when nixpacks finds no stack it knows.
 */
export async function generateBuild(pack: 'nixpacks' | 'static', dir: string, steps: BuildSteps, port: string | null, images: BuildpackImages): Promise<GeneratedBuild> {
  if (pack === 'static') return staticSite(dir, steps, images);
  if (await exists(dir, 'package.json')) return node(dir, steps, port, images);
  if ((await exists(dir, 'requirements.txt')) || (await exists(dir, 'pyproject.toml'))) return python(dir, steps, port, images);
  if (await exists(dir, 'go.mod')) return go(steps, port, images);
  if (await exists(dir, 'index.html')) {
    const site = await staticSite(dir, steps, images);
    // The static image listens on 80 whatever ports_exposes says: the log says so rather than a health check failing unexplained.
    const first = port?.split(',')[0]?.trim();
    return first && first !== '80' ? { ...site, stack: `${site.stack}, served on port 80 (not ports_exposes ${first})` } : site;
  }
  throw new Error(
    `nixpacks found nothing to build: none of ${DETECTED_FILES.join(', ')} is in the repository's base directory. Add a Dockerfile and use build_pack "dockerfile", or set base_directory to where the project is.`,
  );
}
