import type { z } from 'zod';
import type { Logger } from 'pino';
import type { RequiredPermission } from '../auth/permissions.js';
import type { Config } from '../config/config.js';
import type { LimitSpec } from '../limits/rate-limits.js';
import type { Jobs } from './jobs.js';
import type { Db } from '../store/db.js';
import type { Runtime } from './runtime.js';
import type { Caller } from './caller.js';

/** Tool groups an MCP client can select with --toolsets, each with what it holds: the one toolset table. */
export const TOOLSET_DESCRIPTIONS = {
  teams: 'The current team, its members, every resource in one list, the version.',
  servers: 'Servers (SSH or local engines), their destinations and SSH private keys.',
  projects: 'Projects and their environments.',
  applications: 'Applications: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  databases: 'Databases of each type: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  services: 'Docker compose services: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  deployments: 'Deployments and migrations: deploy, follow, cancel, history.',
  settings: "Instance settings: API toggle and allow-list (root team's root token).",
  feedback: 'Feedback to the people who run this instance.',
  tags: "Tags: the team's tag records, tags on applications, databases and services (deploy by tag).",
  shared_variables: 'Shared variables of the team, a project, an environment or a server, referenced from resource variables as {{team.KEY}}.',
  backups: 'Database backups: scheduled and on-demand dumps, their executions, restore.',
  notifications: 'Team notifications: e-mail, Discord, Slack, Telegram, Pushover and webhook settings, and which events each sends.',
  audit: "The team's audit log: who changed what, when, from which door, with what result.",
} as const;
export type Toolset = keyof typeof TOOLSET_DESCRIPTIONS;
export const TOOLSETS = Object.keys(TOOLSET_DESCRIPTIONS) as Toolset[];

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export type ProgressReporter = (p: { progress: number; total?: number; message?: string }) => Promise<void>;

/** A job a call started, for a door that follows it (an MCP task cancels it with the task). */
export interface StartedJob {
  kind: 'deployment' | 'migration';
  uuid: string;
}

/** What a door may add for one call: progress reports (MCP progress tokens), cancellation, its answer bound. */
export interface CallOptions {
  progress?: ProgressReporter;
  signal?: AbortSignal;
  /**
   * How long this call may wait for the work it starts before answering with how to follow it:
   * undefined is the instance's setting (config.answerWithinMs), Infinity waits to the end (an MCP
   * task's call, whose client is not waiting on it). Read through src/core/answer-bound.ts only.
   */
  answerWithinMs?: number;
  /** Told of each deployment or migration the call queues, when it is queued. */
  onJob?: (job: StartedJob) => void;
  /**
   * A list (http.list) answers every item instead of a page: the REST door's call that names
   * neither `page` nor `per_page`, as Coolify's lists answer. MCP tools keep their pages.
   */
  everyItem?: boolean;
}

export interface OperationContext extends CallOptions {
  caller: Caller;
  db: Db;
  config: Config;
  logger: Logger;
  runtime: Runtime;
  jobs: Jobs;
  /** Runs an approved call as the caller that asked, past the approval gate (the approvals operations). */
  runHeld?: (op: Operation, caller: Caller, input: unknown) => Promise<unknown>;
}

/**
 * An operation, declared once as data. The REST router, the MCP tool list and the OpenAPI
 * document are all derived from these declarations.
 */
export interface Operation<I extends z.ZodObject = z.ZodObject, O extends z.ZodType = z.ZodType> {
  /** snake_case; also the MCP tool name. */
  name: string;
  /** The tool's title, as an agent's client shows it. */
  title: string;
  /**
   * What an agent reads about the tool: when to use it, what it changes and what to do next (the
   * MCP tool description and the OpenAPI description). `summary` is the one line for REST docs.
   */
  description: string;
  summary: string;
  /** What the caller's token must hold; 'authenticated' means any valid token. */
  permission: RequiredPermission | 'authenticated';
  toolset: Toolset;
  /**
   * Listed by default (the MCP default tool set): the operations agents use most (find a resource
   * or a migration target, read it, deploy, start/stop/restart, logs, migrate, the current team).
   * Every other operation stays one call away (enable_toolsets, or describe_operation +
   * call_operation), so the list an agent pays for in every conversation stays small.
   */
  default?: true;
  /** Path parameters, query and body fields together, by their REST names. Strict. */
  input: I;
  output: O;
  annotations: {
    readOnly: boolean;
    destructive: boolean;
    idempotent: boolean;
    /** Reaches beyond berth's own store (engines, webhooks). */
    openWorld: boolean;
  };
  http: {
    method: HttpMethod;
    /** Full path, parameters as {name} (OpenAPI style). */
    path: string;
    /** Success status; 200 unless given. */
    status?: number;
    /**
     * The output is a page (listOf): REST sends its items as a bare array and the rest as headers.
     * Without `page` and `per_page` a REST call gets every item (Coolify's lists do), except a
     * list declared 'paged' (berth's own audit log, which grows without bound).
     */
    list?: true | 'paged';
    /** REST sends this output field as text/plain (Coolify's GET /version). */
    text?: string;
    /** Further paths for the same operation (Coolify 4.3 renamed /teams/current to /team). */
    aliases?: string[];
    /**
     * Body fields whose REST name is taken by a path parameter, by REST name → input name (Coolify
     * names a storage `uuid` in the body of /applications/{uuid}/storages): the REST door and
     * remote mode translate, MCP tools use the input name.
     */
    bodyNames?: Readonly<Record<string, string>>;
    /**
     * Fields Coolify also reads from the query string of this POST/PATCH/PUT (`POST /deploy?uuid=…`).
     * A write takes only these from its query; any other query field is a 422, never input. GET
     * and DELETE take every field that is not in the path from the query.
     */
    query?: readonly string[];
    /**
     * Coolify 4.3.11 answers GET on this POST route with 405 "This endpoint has changed to a POST
     * request." and `Allow: POST` (OtherController::post_required, after the route's token and
     * permission checks): the REST door answers the same, and nothing runs. Not a route of its own
     * in the OpenAPI document (Coolify's does not list it either).
     */
    getMovedToPost?: true;
    /**
     * Coolify answers POST on this read as well (`Route::match(['get','post'])` on a service
     * application's logs): the same operation, its fields from the query or the body.
     */
    alsoPost?: true;
  };
  access?: {
    /** Reachable while the API is disabled (only POST /enable). */
    whenApiDisabled?: boolean;
    /** Reachable through the MCP door while it is disabled (only enable_mcp, over stdio). */
    whenMcpDisabled?: boolean;
    /** Instance-wide: needs a token of the root team, on top of the permission. */
    rootTeamOnly?: boolean;
  };
  /** A limit of its own per source address, instead of the general per-user bucket. */
  rateLimit?: LimitSpec;
  /**
   * Changes only berth's store, every read and write through ctx.db (no engine, job, other
   * handle or nested db.transaction(); atomically() joins): the call then runs in one
   * transaction with its audit entry, which may be run again on a serialization retry.
   */
  storeOnly?: true;
  /**
   * The call itself deletes or overwrites data that exists now, though not by HTTP DELETE (a
   * restore over a database, a Docker cleanup): the `delete` approval class holds it with every
   * DELETE. `annotations.destructive` is wider (stop, cancel) and does not decide this.
   */
  destroysData?: true;
  /**
   * For the production_env approval class: whether the variables this call changes are in
   * production (src/core/production.ts). Without it, the resource the input's uuid names is.
   */
  inProduction?: (db: Db, caller: Caller, input: Record<string, unknown>) => Promise<boolean>;
  /**
   * Coolify fields of this operation that berth knows but cannot apply yet, each with what to do
   * instead: sent, they are refused by name (422) rather than as unknown fields or dropped; a
   * CoolifyField's `accepts` values ask for what berth does anyway and pass (parseInput).
   */
  unsupported?: Readonly<Record<string, string | CoolifyField>>;
  run(ctx: OperationContext, input: z.infer<I>): Promise<z.infer<O>>;
}

/** A Coolify field berth does not apply: the values that ask for what berth does anyway pass; any other is refused with the hint. */
export interface CoolifyField {
  hint: string;
  accepts: ReadonlyArray<string | number | boolean | null>;
}

/**
 * An operation as its module declares it: the input and output schemas as functions, built on
 * first use. A `berth mcp` session calls one or two operations; building every operation's
 * schemas when the table loads was the largest part of its cold start.
 */
export type OperationDeclaration<I extends z.ZodObject, O extends z.ZodType> = Omit<Operation<I, O>, 'input' | 'output'> & { input: () => I; output: () => O };

/** Keeps the input/output types of one declaration tied together; its schemas are made once, when first read. */
export function defineOperation<I extends z.ZodObject, O extends z.ZodType>(decl: OperationDeclaration<I, O>): Operation<I, O> {
  const { input, output, ...op } = decl;
  let i: I | undefined;
  let o: O | undefined;
  return Object.defineProperties(op, {
    input: { get: () => (i ??= input()), enumerable: true },
    output: { get: () => (o ??= output()), enumerable: true },
  }) as Operation<I, O>;
}

/** Path parameter names of a path template, in order. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
}

/** One way an operation is reached over REST: its declared method, at its path or an alias. */
export interface OperationRoute {
  method: HttpMethod;
  path: string;
  /** The POST of an `alsoPost` read: its fields from the query or the body. */
  alsoPost?: true;
}

/** Every method and path an operation answers (its path and aliases): the router, OpenAPI and the 405's Allow read this. */
export function routesOf(op: Pick<Operation, 'http'>): OperationRoute[] {
  const paths = [op.http.path, ...(op.http.aliases ?? [])];
  return [...paths.map((path) => ({ method: op.http.method, path })), ...(op.http.alsoPost ? paths.map((path) => ({ method: 'POST' as const, path, alsoPost: true as const })) : [])];
}

/** The paths where a GET answers Coolify's "changed to a POST request" 405 (Operation.http.getMovedToPost). */
export function movedToPostPaths(op: Pick<Operation, 'http'>): string[] {
  return op.http.getMovedToPost ? [op.http.path, ...(op.http.aliases ?? [])] : [];
}
