/**
 * Verification of a volume copy by what is stored on both sides, listed inside the engines
 * themselves (so berth reads no volume data back): a helper container on each engine lists every
 * entry of its volume — type, permissions, owner; size and link count of regular files;
 * link targets — sorted, and prints `<entries> <files> <bytes> <sha256 of the list>`.
 *
 * The destination's helper gets the source's lists uploaded first (an archive stream from the
 * source helper, never held whole), re-applies owners when the archive lost them (podman), lists
 * its own volume and prints the first differing lines. berth compares the two summaries: equal
 * lists mean the same file count, the same byte count per file, and the same metadata.
 *
 * The helper image needs sh, find, stat, sort, awk, sha256sum, cmp, diff, chown, chmod (busybox).
 */
import { randomUUID } from 'node:crypto';
import type { EngineClient } from './engine.js';
import { VerificationError } from './errors.js';

/** Where helpers mount the volume: a path no image is expected to have (so nothing is copied up). */
export const MOUNT = '/berth-volume';
export const HELPER_LABEL = 'berth.volume-copy';
/** Where the helpers keep their lists, in their own filesystem (never in the volume). */
const DIR = '/tmp/berth-list';

/**
 * One line per entry, sorted bytewise. Directory sizes and mtimes differ between filesystems and
 * extraction order, so they are left out; the volume root is the `.` line. Sockets are left out:
 * container archives do not carry them.
 */
const LIST = (out: string) => `{ find . -type f -exec stat -c 'f|%s|%a|%u:%g|%h|%n' {} + &&
  find . -type d -exec stat -c 'd|-|%a|%u:%g|-|%n' {} + &&
  find . ! -type f ! -type d ! -type s -exec stat -c '%F|%s|%a|%u:%g|-|%N' {} + ; } | LC_ALL=C sort > ${out}`;
/** `uid:gid:mode:./path` of the root and of every entry not owned by root:root (what podman's archive loses). */
const OWNERS = (out: string) =>
  `{ stat -c '%u:%g:%a:%n' . && find . -mindepth 1 \\( ! -user 0 -o ! -group 0 \\) -exec stat -c '%u:%g:%a:%n' {} + ; } | LC_ALL=C sort > ${out}`;
const SUMMARY = (list: string) =>
  `echo "$(wc -l < ${list}) $(awk -F'|' '$1 == "f" { n++; s += $2 } END { printf "%d %.0f", n, s }' ${list}) $(sha256sum < ${list} | cut -d ' ' -f 1)"`;
/** chown, then the mode again (chown clears setuid/setgid); symlinks only chown -h. */
const APPLY_OWNERS = `while IFS= read -r line; do
  u=\${line%%:*}; r=\${line#*:}; g=\${r%%:*}; r=\${r#*:}; m=\${r%%:*}; p=\${r#*:}
  chown -h "$u:$g" "$p" || exit 3
  if [ ! -L "$p" ]; then chmod "$m" "$p" || exit 4; fi
done < ${DIR}/owners`;

/**
 * Both scripts fail on any failing command, in a pipeline too (a failing find or stat must never
 * leave a short list on both sides that compares equal).
 */
const STRICT = 'set -e; set -o pipefail';
/** Lines are entries: a name with a newline could pass for two entries, so it refuses the copy. */
const NO_NEWLINE_NAMES = `nl='
'
if [ -n "$(find . -name "*$nl*" | head -n 1)" ]; then echo 'a file name contains a newline; such volumes cannot be verified' >&2; exit 5; fi`;

export const SOURCE_SCRIPT = `${STRICT}; mkdir -p ${DIR}; cd ${MOUNT}
${NO_NEWLINE_NAMES}
${LIST(`${DIR}/list`)}
${OWNERS(`${DIR}/owners`)}
echo "$(${SUMMARY(`${DIR}/list`)}) $(wc -l < ${DIR}/owners)"`;

const destinationScript = (fixOwners: boolean) => `${STRICT}; cd ${MOUNT}
${fixOwners ? APPLY_OWNERS : ':'}
${LIST('/tmp/berth-dest.list')}
${SUMMARY('/tmp/berth-dest.list')}
cmp -s ${DIR}/list /tmp/berth-dest.list || diff ${DIR}/list /tmp/berth-dest.list | grep '^[-+][^-+]' | head -n 20 >&2 || true`;

export interface ListingSummary {
  entries: number;
  files: number;
  bytes: number;
  sha256: string;
}

function parseSummary(engine: EngineClient, output: string, extra: number): ListingSummary & { rest: number[] } {
  const parts = output.trim().split(/\s+/);
  const nums = [0, 1, 2, ...Array.from({ length: extra }, (_, i) => 4 + i)].map((i) => Number(parts[i]));
  const sha256 = parts[3] ?? '';
  if (parts.length !== 4 + extra || nums.some((n) => !Number.isSafeInteger(n)) || !/^[0-9a-f]{64}$/.test(sha256)) {
    throw new Error(`listing helper on ${engine.endpoint} printed ${JSON.stringify(output.slice(0, 300))}`);
  }
  const [entries = 0, files = 0, bytes = 0, ...rest] = nums;
  // Every list holds at least the volume root (`.`): an empty one means the listing did not run.
  if (entries < 1) throw new Error(`listing helper on ${engine.endpoint} listed nothing: ${JSON.stringify(output.slice(0, 300))}`);
  return { entries, files, bytes, sha256, rest };
}

export interface HelperRun {
  engine: EngineClient;
  volume: string;
  readOnly: boolean;
  script: string;
  image: string;
  labels: Record<string, string>;
  signal: AbortSignal | undefined;
  /** Every container made is pushed here, for the caller to remove whatever happens. */
  cleanup: { engine: EngineClient; id: string }[];
  /** Runs between create and start (e.g. to upload files into the container). */
  before?: (id: string) => Promise<void>;
}

/** Runs a shell script in a helper with the volume mounted; resolves its id and stdout, or throws with its output. */
export async function runHelper(h: HelperRun): Promise<{ id: string; stdout: string; stderr: string }> {
  const { Id } = await h.engine.createContainer(
    `berth-vcopy-${randomUUID().slice(0, 13)}`,
    {
      image: h.image,
      cmd: ['sh', '-c', h.script],
      volumes: [{ volume: h.volume, target: MOUNT, readOnly: h.readOnly, noCopy: true }],
      networkMode: 'none',
      labels: { [HELPER_LABEL]: 'listing', ...h.labels },
    },
    { signal: h.signal },
  );
  h.cleanup.push({ engine: h.engine, id: Id });
  if (h.before) await h.before(Id);
  await h.engine.startContainer(Id, { signal: h.signal });
  const { StatusCode } = await h.engine.waitContainer(Id, { signal: h.signal });
  const logs = await h.engine.containerLogs(Id, { signal: h.signal, tty: false, maxBytes: 64 * 1024 });
  const of = (s: string) => logs.entries.filter((e) => e.stream === s).map((e) => e.line).join('\n').trim();
  if (StatusCode !== 0) {
    throw new Error(`helper on ${h.engine.endpoint} (volume ${h.volume}) exited with ${StatusCode}: ${`${of('stdout')}\n${of('stderr')}`.trim().slice(0, 500)}`);
  }
  return { id: Id, stdout: of('stdout'), stderr: of('stderr') };
}

export interface ListedSource {
  /** The stopped helper holding the lists (for the destination to fetch). */
  id: string;
  summary: ListingSummary;
  /** Entries whose owner podman's archive would lose (the root included). */
  ownerEntries: number;
}

type Side = { engine: EngineClient; volume: string };
type Common = { image: string; labels: Record<string, string>; signal: AbortSignal | undefined; cleanup: HelperRun['cleanup'] };

/** Lists the source volume (mounted read-only). */
export async function listSource(from: Side, c: Common): Promise<ListedSource> {
  const run = await runHelper({ ...from, ...c, readOnly: true, script: SOURCE_SCRIPT });
  const s = parseSummary(from.engine, run.stdout, 1);
  return { id: run.id, summary: { entries: s.entries, files: s.files, bytes: s.bytes, sha256: s.sha256 }, ownerEntries: s.rest[0] ?? 0 };
}

/**
 * Uploads the source's lists into a helper on the destination, re-applies owners when asked,
 * lists the destination and compares: a VerificationError unless both lists are identical.
 */
export async function verifyDestination(from: Side, to: Side, source: ListedSource, fixOwners: boolean, c: Common): Promise<ListingSummary> {
  const run = await runHelper({
    ...to,
    ...c,
    readOnly: false,
    script: destinationScript(fixOwners),
    before: async (id) => {
      await to.engine.putArchive(id, '/tmp', await from.engine.getArchive(source.id, DIR, { signal: c.signal }), { signal: c.signal });
    },
  });
  const dest = parseSummary(to.engine, run.stdout, 0);
  const s = source.summary;
  if (dest.sha256 !== s.sha256 || dest.entries !== s.entries) {
    const counts = `${s.entries} entries, ${s.files} files, ${s.bytes} bytes → ${dest.entries} entries, ${dest.files} files, ${dest.bytes} bytes`;
    const lines = run.stderr.split('\n').filter(Boolean);
    throw new VerificationError(
      `volume ${to.volume} (${to.engine.endpoint}) does not match ${from.volume} (${from.engine.endpoint}): ${counts}; ${lines.slice(0, 5).join('; ')}`,
      [counts, ...lines],
    );
  }
  return { entries: dest.entries, files: dest.files, bytes: dest.bytes, sha256: dest.sha256 };
}
