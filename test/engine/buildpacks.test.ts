/**
 * The generated builds' detection (nixpacks, static) on real directories: what each stack's
 * Dockerfile says. Go's is checked whole here; test/e2e/buildpacks.test.ts runs it from a git
 * daemon repository with a stand-in go tool (a Go toolchain image is too heavy to make there), as
 * it runs the other stacks.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BUILDPACK_IMAGES, loadConfig } from '../../src/config/config.js';
import { generateBuild } from '../../src/engine/buildpacks.js';

const images = DEFAULT_BUILDPACK_IMAGES;
const dirs: string[] = [];
const repo = (files: Record<string, string>) => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'berth-bp-unit-'));
  dirs.push(d);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(d, f)), { recursive: true });
    writeFileSync(path.join(d, f), text);
  }
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('generated builds', () => {
  it('Go: go.mod is downloaded, built and the binary run, on the go image, with the port', async () => {
    const g = await generateBuild('nixpacks', repo({ 'go.mod': 'module x\n', 'main.go': 'package main\n' }), {}, '8080', images);
    expect(g.stack).toBe('go (go.mod)');
    expect(g.dockerfile).toBe(
      ['FROM golang:1.23', 'WORKDIR /app', 'COPY . .', 'RUN go mod download', 'RUN go build -o /usr/local/bin/app .', 'ENV PORT=8080', 'EXPOSE 8080', 'CMD ["sh","-c","/usr/local/bin/app"]', ''].join(
        '\n',
      ),
    );
    const custom = await generateBuild('nixpacks', repo({ 'go.mod': 'module x\n' }), { build_command: 'go build -o /bin/srv ./cmd/srv', start_command: '/bin/srv -v' }, '80', images);
    expect(custom.dockerfile).toContain('RUN go build -o /bin/srv ./cmd/srv');
    expect(custom.dockerfile).toContain('CMD ["sh","-c","/bin/srv -v"]');
  });

  it('Node: the package manager comes from the lockfile; main when there is no start script', async () => {
    const pnpm = await generateBuild('nixpacks', repo({ 'package.json': '{"scripts":{"start":"node a.js"}}', 'pnpm-lock.yaml': '' }), {}, '3000', images);
    expect(pnpm.stack).toBe('node (pnpm)');
    expect(pnpm.dockerfile).toContain('RUN corepack enable\nRUN pnpm install --frozen-lockfile\n');
    expect(pnpm.dockerfile).not.toContain('run build');
    expect(pnpm.dockerfile).toContain('CMD ["sh","-c","pnpm start"]');
    const yarn = await generateBuild('nixpacks', repo({ 'package.json': '{"main":"lib/index.js","scripts":{"build":"tsc"}}', 'yarn.lock': '' }), {}, '3000', images);
    expect(yarn.dockerfile).toContain('RUN yarn install --frozen-lockfile\nRUN yarn run build\n');
    expect(yarn.dockerfile).toContain('CMD ["sh","-c","node lib/index.js"]');
    const bare = await generateBuild('nixpacks', repo({ 'package.json': '{}', 'server.js': '' }), {}, null, images);
    expect(bare.dockerfile).toContain('RUN npm install --no-audit --no-fund\n');
    expect(bare.dockerfile).not.toContain('ENV PORT');
    expect(bare.dockerfile).toContain('CMD ["sh","-c","node server.js"]');
    await expect(generateBuild('nixpacks', repo({ 'package.json': '{"scripts":{"build":"x"}}' }), {}, '3000', images)).rejects.toThrow(/no "start" script and no "main".*give start_command/);
    await expect(generateBuild('nixpacks', repo({ 'package.json': '{oops' }), {}, '3000', images)).rejects.toThrow(/package.json is not valid JSON/);
  });

  it('Python: pyproject installs the project; the start command is needed when nothing names one', async () => {
    const py = await generateBuild('nixpacks', repo({ 'pyproject.toml': '[project]\nname="x"\n', 'app.py': '' }), {}, '8000', images);
    expect(py.stack).toBe('python (pyproject.toml)');
    expect(py.dockerfile).toContain('FROM python:3.12-slim\n');
    expect(py.dockerfile).toContain('RUN python -m pip install --no-cache-dir .\n');
    expect(py.dockerfile).toContain('CMD ["sh","-c","python app.py"]');
    await expect(generateBuild('nixpacks', repo({ 'requirements.txt': '' }), {}, '8000', images)).rejects.toThrow(/give start_command/);
    const given = await generateBuild('nixpacks', repo({ 'requirements.txt': '' }), { start_command: 'gunicorn app:app -b 0.0.0.0:$PORT' }, '8000', images);
    expect(given.dockerfile).toContain('CMD ["sh","-c","gunicorn app:app -b 0.0.0.0:$PORT"]');
  });

  it('static: plain files, or publish_directory; nixpacks serves an index.html as static; nothing known fails naming the files', async () => {
    const plain = await generateBuild('nixpacks', repo({ 'index.html': '' }), {}, '80', images);
    expect(plain.dockerfile).toBe('FROM nginx:alpine\nCOPY . /usr/share/nginx/html/\n');
    expect((await generateBuild('nixpacks', repo({ 'index.html': '' }), {}, '3000', images)).stack).toBe('static, served on port 80 (not ports_exposes 3000)');
    const dist = await generateBuild('static', repo({ 'public/index.html': '' }), { publish_directory: '/public/' }, '80', images);
    expect(dist.dockerfile).toBe('FROM nginx:alpine\nCOPY public/ /usr/share/nginx/html/\n');
    await expect(generateBuild('nixpacks', repo({ 'README.md': '' }), {}, '80', images)).rejects.toThrow(/none of package.json, requirements.txt, pyproject.toml, go.mod, index.html/);
  });

  it('a step with a line break never reaches the Dockerfile', async () => {
    await expect(generateBuild('nixpacks', repo({ 'go.mod': '' }), { install_command: 'true\nUSER root' }, '80', images)).rejects.toThrow(/single line/);
  });

  it('BERTH_BUILDPACK_IMAGES overrides some images and keeps the others; anything else is refused at start', () => {
    expect(loadConfig({ BERTH_BUILDPACK_IMAGES: '{"node":"registry.example.com/node:22"}' }).buildpackImages).toEqual({ ...DEFAULT_BUILDPACK_IMAGES, node: 'registry.example.com/node:22' });
    expect(loadConfig({}).buildpackImages).toEqual({ node: 'node:22-slim', python: 'python:3.12-slim', go: 'golang:1.23', static: 'nginx:alpine' });
    expect(() => loadConfig({ BERTH_BUILDPACK_IMAGES: '{"ruby":"ruby:3"}' })).toThrow(/BERTH_BUILDPACK_IMAGES.*keys among node, python, go, static/);
    expect(() => loadConfig({ BERTH_BUILDPACK_IMAGES: 'node:22' })).toThrow(/BERTH_BUILDPACK_IMAGES/);
  });
});
