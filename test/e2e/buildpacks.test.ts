/**
 * Build packs without a Dockerfile on a real engine (issue 42): repositories served on loopback by
 * `git daemon` (no internet), base images made on the test engine from the host's node + npm,
 * Debian's python3 + pip and busybox httpd (`engines.sh buildpack-images`), named through
 * BERTH_BUILDPACK_IMAGES. Each deploy shows its install, build and start steps ran: the generated
 * Dockerfile in the log, and what the running app answers on its port (asked from inside the
 * container: the test engines have no network). Go runs with a stand-in go tool (FAKE_GO below:
 * a Go toolchain image is too heavy to make here); its Dockerfile is checked whole in
 * test/engine/buildpacks.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES_SCRIPT, enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { gitDaemon } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, registerEngines, until, type Platform } from './support.js';

const IMAGES = { node: 'localhost/berth-bp-node:test', python: 'localhost/berth-bp-python:test', static: 'localhost/berth-bp-static:test', go: 'localhost/berth-bp-go:test' };

/**
 * A stand-in for the go tool (a Go toolchain image is too heavy to make on every run): `go mod
 * download` checks go.mod, `go build -o OUT .` writes OUT as a program that prints what main.go's
 * fmt.Println says and serves. It shows what berth's part is: the repository cloned, go.mod
 * detected, the generated steps run in order and the built binary started as the image's command.
 */
const FAKE_GO = String.raw`#!/bin/sh
set -e
case "$1" in
  mod) grep -q '^module ' go.mod; echo "go mod download: ok";;
  build) out=""; while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then shift; out="$1"; fi; shift; done
    msg=$(sed -n 's/.*fmt.Println("\(.*\)").*/\1/p' main.go)
    printf '#!/bin/sh\necho "%s"\nmkdir -p /srv && echo "%s" > /srv/index.html\nexec httpd -f -p "$PORT" -h /srv\n' "$msg" "$msg" > "$out"; chmod +x "$out";;
  *) exit 2;;
esac
`;

const SERVER_JS = `const fs = require('node:fs');
const http = require('node:http');
const built = fs.readFileSync(__dirname + '/dist/built.txt', 'utf8').trim();
http.createServer((q, r) => r.end(built + ' | started by ' + process.argv[2])).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`;
const NODE_APP = {
  'package.json': JSON.stringify({ name: 'n', version: '1.0.0', scripts: { build: 'node build.js', start: 'node server.js npm-start' } }),
  'package-lock.json': JSON.stringify({ name: 'n', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'n', version: '1.0.0' } } }),
  'build.js': `require('node:fs').mkdirSync('dist', { recursive: true }); require('node:fs').writeFileSync('dist/built.txt', 'built by npm run build');\n`,
  'server.js': SERVER_JS,
};

describe.skipIf(!enginesAvailable)(`build packs ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let dir: string;
  let daemon: { port: number; stop(): void } | undefined;
  let base: string;
  const made: string[] = [];

  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });
  /** Commits `files` (null removes one) to repository `name` on main, made on first use. */
  const commit = (name: string, files: Record<string, string | Buffer | null>) => {
    const work = path.join(dir, 'work', name);
    const bare = path.join(dir, 'repos', `${name}.git`);
    if (!existsSync(bare)) {
      execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
      writeFileSync(path.join(bare, 'git-daemon-export-ok'), '');
      execFileSync('git', ['init', '-q', '-b', 'main', work]);
      git(work, 'remote', 'add', 'origin', bare);
    }
    for (const [f, text] of Object.entries(files)) {
      if (text === null) rmSync(path.join(work, f));
      else {
        mkdirSync(path.dirname(path.join(work, f)), { recursive: true });
        writeFileSync(path.join(work, f), text);
      }
    }
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '--allow-empty', '-m', 'change');
    git(work, 'push', '-q', 'origin', 'main');
    return `${base}/${name}.git`;
  };

  beforeAll(async () => {
    execFileSync('bash', [ENGINES_SCRIPT, 'buildpack-images', engines.dir], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 300_000 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-bp-'));
    mkdirSync(path.join(dir, 'repos'));
    daemon = await gitDaemon({ root: path.join(dir, 'repos') });
    base = `git://127.0.0.1:${daemon.port}`;
    const goDir = path.join(dir, 'go-image');
    mkdirSync(goDir);
    writeFileSync(path.join(goDir, 'go'), FAKE_GO, { mode: 0o755 });
    writeFileSync(path.join(goDir, 'Dockerfile'), `FROM ${engines.image}\nCOPY go /usr/local/bin/go\n`);
    engines.podman('a', ['build', '-q', '-t', IMAGES.go, goDir]);
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1', BERTH_BUILDPACK_IMAGES: JSON.stringify(IMAGES) });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 400_000);
  afterAll(async () => {
    for (const uuid of made) await api?.req('DELETE', `/applications/${uuid}`);
    await s?.stop();
    daemon?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  const place = () => ({ project_uuid: p.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production' });
  /** What the app answers on its port, asked from inside its container (busybox wget). */
  const answer = (uuid: string, port: number) => engines.podman('a', ['exec', uuid, 'wget', '-qO-', `http://127.0.0.1:${port}/`]).trim();
  const deploy = async (uuid: string, expected: 'finished' | 'failed' = 'finished') => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 180_000, expected);

  it("a Coolify client's create-from-public-repository with its defaults (nixpacks) deploys a Node repository without a Dockerfile; a failed build leaves it running", async () => {
    const repo = commit('node', NODE_APP);
    // The body a Coolify client sends with Coolify's defaults: build_pack nixpacks, empty steps.
    const created = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repo,
      git_branch: 'main',
      build_pack: 'nixpacks',
      ports_exposes: '3000',
      install_command: '',
      build_command: '',
      start_command: '',
      publish_directory: '',
      base_directory: '/',
      instant_deploy: true,
    });
    made.push(created.uuid);
    const d = await deployed(api, created.deployment_uuid, 180_000);
    expect(d.logs).toContain('nixpacks detected node (npm); generated Dockerfile:');
    expect(d.logs).toContain(`FROM ${IMAGES.node}`);
    expect(d.logs).toContain('RUN npm ci --no-audit --no-fund');
    expect(d.logs).toContain('RUN npm run build');
    expect(d.logs).toContain('ENV PORT=3000');
    expect(d.logs).toContain('CMD ["sh","-c","npm start"]');
    await until('the app to answer', async () => (answer(created.uuid, 3000).includes('started by') ? true : undefined), 30_000, 500);
    expect(answer(created.uuid, 3000)).toBe('built by npm run build | started by npm-start');
    const app = await api.ok('GET', `/applications/${created.uuid}`);
    expect(app).toMatchObject({ build_pack: 'nixpacks', install_command: null, start_command: null, dockerfile_location: null, docker_registry_image_tag: d.deployment_uuid });

    commit('node', { 'build.js': 'process.exit(3)\n' });
    const failed = await deploy(created.uuid, 'failed');
    expect(failed.logs).toMatch(/npm run build/);
    expect(answer(created.uuid, 3000)).toBe('built by npm run build | started by npm-start');
    expect((await api.ok('GET', `/applications/${created.uuid}`)).docker_registry_image_tag).toBe(d.deployment_uuid);
    commit('node', { 'build.js': NODE_APP['build.js'] });
  }, 600_000);

  it('start_command and install_command replace the detected steps; a generated build rolls back as a Dockerfile build does', async () => {
    const repo = commit('node', NODE_APP);
    const { uuid } = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repo,
      git_branch: 'main',
      build_pack: 'nixpacks',
      ports_exposes: '4000',
      install_command: 'echo custom install > installed.txt',
      start_command: 'node server.js "start_command and $(cat installed.txt)"',
    });
    made.push(uuid);
    const d = await deploy(uuid);
    expect(d.logs).toContain('RUN echo custom install > installed.txt');
    expect(d.logs).not.toContain('RUN npm ci');
    expect(d.logs).toContain('RUN npm run build');
    expect(await api.ok('GET', `/applications/${uuid}`)).toMatchObject({ install_command: 'echo custom install > installed.txt', start_command: expect.stringContaining('node server.js') });
    await until('the app to answer', async () => (answer(uuid, 4000).includes('started by') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 4000)).toBe('built by npm run build | started by start_command and custom install');

    // A generated build is kept for rollback as a Dockerfile build is.
    commit('node', { 'build.js': NODE_APP['build.js'].replace('built by npm run build', 'second build') });
    await deploy(uuid);
    await until('the second build to answer', async () => (answer(uuid, 4000).startsWith('second build') ? true : undefined), 30_000, 500);
    const back = await api.ok('POST', `/applications/${uuid}/rollback`, { commit: d.deployment_uuid });
    const rb = await deployed(api, back.deployment_uuid, 120_000);
    expect(rb.logs).not.toMatch(/cloning|generated Dockerfile/);
    await until('the first build to answer again', async () => (answer(uuid, 4000).startsWith('built by npm run build') ? true : undefined), 30_000, 500);
    commit('node', { 'build.js': NODE_APP['build.js'] });
  }, 400_000);

  it('static: a Node-built site’s publish_directory served on port 80 by the static image', async () => {
    const repo = commit('site', {
      'package.json': JSON.stringify({ name: 'site', version: '1.0.0', scripts: { build: 'node build.js' } }),
      'build.js': `require('node:fs').mkdirSync('out', { recursive: true }); require('node:fs').writeFileSync('out/index.html', '<h1>built static site</h1>');\n`,
      'index.html': '<h1>the unbuilt source</h1>',
    });
    const { uuid } = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repo,
      git_branch: 'main',
      build_pack: 'static',
      ports_exposes: '80',
      publish_directory: '/out',
    });
    made.push(uuid);
    const d = await deploy(uuid);
    expect(d.logs).toContain('static detected static (built with node)');
    expect(d.logs).toContain('RUN npm install --no-audit --no-fund');
    expect(d.logs).toContain(`FROM ${IMAGES.static}`);
    expect(d.logs).toContain('COPY --from=build /app/out/ /usr/share/nginx/html/');
    await until('the site to answer', async () => (answer(uuid, 80).includes('<h1>') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 80)).toBe('<h1>built static site</h1>');
  }, 400_000);

  it('a Python app: requirements installed, started from its Procfile', async () => {
    // A wheel in the repository: pip installs it with no index (the engines have no network).
    const wheelDir = path.join(dir, 'wheel');
    mkdirSync(wheelDir, { recursive: true });
    execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        `import zipfile,sys
z = zipfile.ZipFile(sys.argv[1], 'w')
z.writestr('greet.py', 'def hello():\\n    return "hello from the installed wheel"\\n')
z.writestr('greet-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: greet\\nVersion: 1.0\\n')
z.writestr('greet-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
z.writestr('greet-1.0.dist-info/RECORD', 'greet.py,,\\ngreet-1.0.dist-info/METADATA,,\\ngreet-1.0.dist-info/WHEEL,,\\ngreet-1.0.dist-info/RECORD,,\\n')
z.close()`,
        path.join(wheelDir, 'greet-1.0-py3-none-any.whl'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const repo = commit('py', {
      'requirements.txt': './wheels/greet-1.0-py3-none-any.whl\n',
      'wheels/greet-1.0-py3-none-any.whl': execFileSync('cat', [path.join(wheelDir, 'greet-1.0-py3-none-any.whl')]),
      Procfile: 'web: python main.py from-procfile\n',
      'main.py': `import greet, http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write((greet.hello() + " | started " + sys.argv[1]).encode())
print("listening", flush=True)
http.server.HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
`,
    });
    const { uuid } = await api.ok('POST', '/applications/public', { ...place(), git_repository: repo, git_branch: 'main', build_pack: 'nixpacks', ports_exposes: '8000' });
    made.push(uuid);
    const d = await deploy(uuid);
    expect(d.logs).toContain('nixpacks detected python (requirements.txt)');
    expect(d.logs).toContain('RUN python -m pip install --no-cache-dir -r requirements.txt');
    expect(d.logs).toContain('CMD ["sh","-c","python main.py from-procfile"]');
    await until('the app to answer', async () => (answer(uuid, 8000).includes('started') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 8000)).toBe('hello from the installed wheel | started from-procfile');
  }, 400_000);

  it('PATCH of build_command takes effect at the next deploy: the new command runs', async () => {
    const repo = commit('node', NODE_APP);
    const { uuid } = await api.ok('POST', '/applications/public', { ...place(), git_repository: repo, git_branch: 'main', build_pack: 'nixpacks', ports_exposes: '3100' });
    made.push(uuid);
    const d = await deploy(uuid);
    expect(d.logs).toContain('RUN npm run build');
    await until('the app to answer', async () => (answer(uuid, 3100).includes('started by') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 3100)).toBe('built by npm run build | started by npm-start');
    const patched = 'mkdir -p dist && echo "built by the patched build_command" > dist/built.txt';
    await api.ok('PATCH', `/applications/${uuid}`, { build_command: patched });
    const next = await deploy(uuid);
    expect(next.logs).toContain(`RUN ${patched}`);
    expect(next.logs).not.toContain('RUN npm run build');
    await until('the rebuilt app to answer', async () => (answer(uuid, 3100).startsWith('built by the patched') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 3100)).toBe('built by the patched build_command | started by npm-start');
  }, 400_000);

  it('Go: a go.mod repository is built and its binary run as the command (with a stand-in go tool)', async () => {
    const repo = commit('go', { 'go.mod': 'module example.test/hello\n\ngo 1.23\n', 'main.go': 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from go.mod") }\n' });
    const { uuid } = await api.ok('POST', '/applications/public', { ...place(), git_repository: repo, git_branch: 'main', build_pack: 'nixpacks', ports_exposes: '8080' });
    made.push(uuid);
    const d = await deploy(uuid);
    expect(d.logs).toContain('nixpacks detected go (go.mod)');
    expect(d.logs).toContain(`FROM ${IMAGES.go}`);
    expect(d.logs).toContain('RUN go mod download');
    expect(d.logs).toContain('RUN go build -o /usr/local/bin/app .');
    expect(d.logs).toContain('CMD ["sh","-c","/usr/local/bin/app"]');
    await until('the binary to answer', async () => (answer(uuid, 8080).includes('hello') ? true : undefined), 30_000, 500);
    expect(answer(uuid, 8080)).toBe('hello from go.mod');
    expect((await api.ok('GET', `/applications/${uuid}/logs`)).logs).toContain('hello from go.mod');
  }, 400_000);

  it('a repository nixpacks cannot read fails its deployment naming what was looked for', async () => {
    const repo = commit('nothing', { 'README.md': 'no code here\n' });
    const { uuid } = await api.ok('POST', '/applications/public', { ...place(), git_repository: repo, git_branch: 'main', build_pack: 'nixpacks', ports_exposes: '3000' });
    made.push(uuid);
    const d = await deploy(uuid, 'failed');
    expect(d.logs).toContain('nixpacks found nothing to build: none of package.json, requirements.txt, pyproject.toml, go.mod, index.html');
  }, 120_000);
});
