import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import type { Plan, PlannedContainer } from './plan.js';

/** What a scheduled task's command left: its exit code and output (the tail, when long), and its start as Coolify cuts it. */
export interface TaskOutcome {
  exitCode: number;
  output: string;
  /** The output from its start, cut after `maxChars` with Coolify's marker (ScheduledTaskJob's boundedTaskCommand), for the run's message. */
  head: string;
}

/** Coolify's words after a cut output (it cuts at 5 MB; berth at the task's maxChars). */
export const cutMarker = (max: number) => `\n\n[... Output truncated at ${max.toLocaleString('en-US')} characters ...]`;

/** A run stopped by its timeout; `output` is what it wrote until then. */
export class TaskTimeoutError extends Error {
  override name = 'TaskTimeoutError';
  constructor(readonly output: string) {
    super('timed out');
  }
}

/** The first line the wrapper writes on stderr: the command's PID inside the container. */
const PID_MARKER = '\u001eberth-task-pid ';

/**
 * Runs the command as `sh -c` under a wrapper that first tells its PID, then execs it (same PID),
 * so a timeout can kill what it started: the exec API has no kill.
 */
const WRAPPER = `printf '${PID_MARKER.replace('\u001e', '\\036')}%s\\n' "$$" >&2; exec sh -c "$1"`;

/**
 * Stops a process and all its descendants inside the container: freezes the root, collects
 * descendants from /proc (ppid is the field after the command name, which may hold spaces),
 * freezes and kills them all. Plain POSIX sh builtins and /proc only: images have little else.
 */
const KILL_TREE = `P=$1; kill -STOP "$P" 2>/dev/null; all=" $P "; changed=1
while [ "$changed" = 1 ]; do changed=0
  for s in /proc/[0-9]*/stat; do
    read -r line < "$s" 2>/dev/null || continue
    pid=\${line%% *}; rest=\${line##*) }; set -- $rest
    case "$all" in *" $pid "*) continue ;; esac
    case "$all" in *" $2 "*) all="$all$pid "; changed=1; kill -STOP "$pid" 2>/dev/null ;; esac
  done
done
kill -KILL $all 2>/dev/null; exit 0`;

/** Runs KILL_TREE for a PID in its own exec (bounded); never throws: the run is failed either way. */
async function killTree(engine: EngineClient, container: string, pid: string): Promise<void> {
  try {
    const { output } = await engine.exec(container, ['sh', '-c', KILL_TREE, 'kill', pid], { signal: AbortSignal.timeout(15_000) });
    for await (const _ of output) void _;
  } catch {
    // The container may have stopped meanwhile: nothing left to kill.
  }
}

/** Keeps the last `max` characters of what is appended (a long output's tail is what matters). */
class Tail {
  private parts: string[] = [];
  private size = 0;
  private cut = false;
  /** The first `max` characters, and how many came in all (head()). */
  private start = '';
  private total = 0;
  constructor(private readonly max: number) {}
  push(s: string): void {
    if (this.start.length < this.max) this.start += s.slice(0, this.max - this.start.length);
    this.total += s.length;
    this.parts.push(s);
    this.size += s.length;
    if (this.size > 2 * this.max) this.compact();
  }
  private compact(): void {
    const all = this.parts.join('');
    if (all.length > this.max) this.cut = true;
    this.parts = [all.slice(-this.max)];
    this.size = this.parts[0]!.length;
  }
  text(): string {
    this.compact();
    return this.cut ? `[… earlier output cut …]\n${this.parts[0]}` : this.parts[0]!;
  }
  /** From the start, as Coolify keeps a task's output: the first `max` characters and its marker. */
  head(): string {
    return this.total > this.max ? `${this.start}${cutMarker(this.max)}` : this.start;
  }
}

/**
 * Runs a shell command in a running container over the engine API (any transport), stdout and
 * stderr kept in the order they came. When `signal` aborts (the task's timeout), the command and
 * everything it started are killed inside the container and TaskTimeoutError is thrown.
 */
export async function execTask(engine: EngineClient, container: string, command: string, opts: { signal: AbortSignal; maxChars: number; what: string }): Promise<TaskOutcome> {
  let running = false;
  try {
    running = (await engine.inspectContainer(container, { signal: opts.signal })).State.Running;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  if (!running) throw new Error(`The container ${container} is not running: start the ${opts.what} first.`);

  const stream = new AbortController();
  const tail = new Tail(opts.maxChars);
  const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  let pid: string | null = null;
  let head = '';
  let timedOut = false;
  const onAbort = () => {
    timedOut = true;
    // The kill runs in its own exec, bounded; the output stream ends when the processes die.
    const stop = pid ? killTree(engine, container, pid) : Promise.resolve();
    void stop.finally(() => setTimeout(() => stream.abort(), 2_000).unref());
  };
  if (opts.signal.aborted) throw new TaskTimeoutError('');
  opts.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const { output, exitCode } = await engine.exec(container, ['sh', '-c', WRAPPER, 'berth-task', command], { signal: stream.signal });
    try {
      for await (const f of output) {
        if (f.stream === 'stdin') continue;
        let text = decoder[f.stream].decode(f.data, { stream: true });
        if (f.stream === 'stderr' && pid === null) {
          // The wrapper's first line; anything after it on the same frame is the command's.
          head += text;
          const nl = head.indexOf('\n');
          if (nl < 0) continue;
          const first = head.slice(0, nl);
          if (first.startsWith(PID_MARKER)) pid = first.slice(PID_MARKER.length).trim();
          else pid = '';
          text = first.startsWith(PID_MARKER) ? head.slice(nl + 1) : head;
          head = '';
          if (pid && timedOut) onAbort();
        }
        tail.push(text);
      }
    } catch (err) {
      if (!timedOut) throw err;
    }
    if (timedOut) throw new TaskTimeoutError(tail.text());
    // The engine may report the exec as running for a moment after its stream ended.
    for (let i = 0; ; i++) {
      try {
        return { exitCode: await exitCode(), output: tail.text(), head: tail.head() };
      } catch (err) {
        if (i >= 20) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    if (timedOut && !(err instanceof TaskTimeoutError)) throw new TaskTimeoutError(tail.text());
    throw err;
  } finally {
    opts.signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The planned container a task runs in: an application's one container whatever name the task
 * carries (as Coolify does), else the service container it names.
 */
export function taskContainer(plan: Plan, container: string | null): PlannedContainer {
  const only = plan.containers.length === 1 ? plan.containers[0] : undefined;
  const c = container === null || (only && !only.spec.labels?.['berth.container']) ? only : plan.containers.find((k) => k.spec.labels?.['berth.container'] === container);
  if (!c)
    throw new Error(
      container === null
        ? `Name the container to run in: one of ${plan.containers.map((k) => k.spec.labels?.['berth.container'] ?? k.name).join(', ')}.`
        : `The service has no container ${container}.`,
    );
  return c;
}
