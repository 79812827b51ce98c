import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `berth mcp-config`: one MCP client's configuration entry for this installation, in that
 * client's own file format, and the merge of it into the client's file (only the `berth` entry is
 * replaced). The entry names absolute paths only, so the client can start it from any directory.
 */

export const CLIENTS = ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'inspector'] as const;
export type Client = (typeof CLIENTS)[number];

export const ENTRY_NAME = 'berth';

/** How the client reaches berth: a `berth mcp` it starts itself, or a running berth's /mcp. */
export type Target = { kind: 'stdio'; command: string; args: string[]; env: Record<string, string> } | { kind: 'http'; url: string; headers: Record<string, string> };

/** VS Code keeps its servers under `servers`; every other client under `mcpServers`. */
export function containerKey(client: Client): 'servers' | 'mcpServers' {
  return client === 'vscode' ? 'servers' : 'mcpServers';
}

/** The client's own entry shape. */
export function clientEntry(client: Client, target: Target): Record<string, unknown> {
  if (target.kind === 'stdio') {
    const launch = { command: target.command, args: target.args, env: target.env };
    // VS Code requires `type`; Claude Code and the Inspector accept it; Claude Desktop and Cursor infer it.
    return client === 'vscode' || client === 'claude-code' || client === 'inspector' ? { type: 'stdio', ...launch } : launch;
  }
  switch (client) {
    case 'cursor':
      return { url: target.url, headers: target.headers };
    case 'inspector':
      return { type: 'streamable-http', url: target.url, headers: target.headers };
    case 'claude-code':
    case 'vscode':
      return { type: 'http', url: target.url, headers: target.headers };
    case 'claude-desktop':
      // Claude Desktop's file takes no remote entries with headers: the caller uses remote mode (stdio) instead.
      throw new Error('Claude Desktop reaches a remote berth through `berth mcp --api-url` (stdio)');
  }
}

/** The whole file the entry lives in. */
export function configDocument(client: Client, entry: Record<string, unknown>): Record<string, unknown> {
  return { [containerKey(client)]: { [ENTRY_NAME]: entry } };
}

/**
 * What is printed without --write: the file's document, except for Claude Code, whose
 * `claude mcp add-json berth '<json>'` takes the server object itself (the wrapper is refused).
 */
export function printedDocument(client: Client, entry: Record<string, unknown>): Record<string, unknown> {
  return client === 'claude-code' ? entry : configDocument(client, entry);
}

/** Where each client reads its configuration (user-wide for the desktop apps, the project for the editors' workspace files). */
export function defaultConfigFile(client: Client, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const home = os.homedir();
  switch (client) {
    case 'claude-desktop':
      if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Claude', 'claude_desktop_config.json');
      if (process.platform === 'win32') return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Claude', 'claude_desktop_config.json');
      return path.join(env.XDG_CONFIG_HOME || path.join(home, '.config'), 'Claude', 'claude_desktop_config.json');
    case 'claude-code':
      return path.join(cwd, '.mcp.json');
    case 'cursor':
      return path.join(home, '.cursor', 'mcp.json');
    case 'vscode':
      return path.join(cwd, '.vscode', 'mcp.json');
    case 'inspector':
      return path.join(cwd, 'mcp-inspector.json');
  }
}

/** Where the printed configuration goes, said on stderr (never the token). */
export function placementHint(client: Client, file: string): string {
  switch (client) {
    case 'claude-code':
      return `Give this object to \`claude mcp add-json berth '<object>' --scope user\` (or run again with --write to put it in ${file}, the project's .mcp.json).`;
    case 'inspector':
      return `Save this as ${file} and run \`npx @modelcontextprotocol/inspector --config ${file} --server berth\`.`;
    default:
      return `Merge this into ${file} (or run again with --write), then restart the client.`;
  }
}

/** A client's file that berth will not rewrite (comments, not an object): left as it is. */
export class NotMergeable extends Error {}

/** What stands for the token where none is made (`--dry-run`): the shape the README's hand-written entry names. */
export const PLACEHOLDER_TOKEN = '<id>|<secret>';

/**
 * The existing file's object, for a merge; null when there is no file. Read before any token is
 * made, so a file that cannot be merged changes nothing anywhere.
 */
export function readConfigFile(file: string): Record<string, unknown> | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (text.trim() === '') return {};
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    // VS Code's files may hold comments (JSONC); rewriting them would drop those.
    throw new NotMergeable(`${file} is not plain JSON (comments?); nothing was changed`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new NotMergeable(`${file} does not hold a JSON object; nothing was changed`);
  return doc as Record<string, unknown>;
}

/** The existing document with only its `berth` entry replaced; everything else kept as it was. */
export function mergeEntry(client: Client, existing: Record<string, unknown> | null, entry: Record<string, unknown>): Record<string, unknown> {
  const doc = { ...(existing ?? {}) };
  const key = containerKey(client);
  const servers = doc[key];
  if (servers !== undefined && (servers === null || typeof servers !== 'object' || Array.isArray(servers))) {
    throw new NotMergeable(`"${key}" in the client's file is not an object; nothing was changed`);
  }
  doc[key] = { ...((servers as Record<string, unknown>) ?? {}), [ENTRY_NAME]: entry };
  return doc;
}

/**
 * Writes the file whole or not at all: a temporary file beside it, renamed over it. It now holds a
 * token, so it is owner-only: a new file 0600, an existing one keeps its mode minus group/other.
 */
export function writeAtomically(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let mode = 0o600;
  try {
    mode = fs.statSync(file).mode & 0o700;
  } catch {
    // A new file.
  }
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    fs.writeFileSync(tmp, text, { mode, flag: 'wx' });
    fs.chmodSync(tmp, mode);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/** berth's base URL from what the user gave (with or without /mcp or /api/v1). */
export function baseUrlOf(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`--http: "${raw}" is not a URL (use http://host:port or https://host)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('--http: use an http:// or https:// URL');
  if (u.username || u.password || u.search || u.hash) throw new Error('--http: give the URL without credentials, query or fragment');
  const p = u.pathname.replace(/\/+$/, '').replace(/\/(mcp|api\/v1)$/, '');
  return `${u.origin}${p}`;
}
