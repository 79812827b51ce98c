/**
 * The shell scripts a volume sync runs inside its two helper containers (busybox: sh, find, stat,
 * awk, sort, tar, sha256sum). Kept apart from the code that drives them so each is read whole.
 *
 * Files in the helpers' own filesystem (never in the volumes), under W:
 *   snap    one line per entry of the source: `<t>|<ctime>|<size>|<path>`, t = d (directory),
 *           f (regular file) or o (anything else but sockets), ctime as `YYYY-MM-DD hh:mm:ss.n…`
 *           in UTC; directories first
 *   start   the second (`YYYY-MM-DD hh:mm:ss`, UTC) in which that snapshot began, read off a file
 *           touched just before it
 *   out/    what the target needs: `snap` again, and for the final pass the verification lists
 *
 * The rule that keeps the last pass exact: an entry is sent again when its path is new since the
 * previous snapshot, or its change time (ctime: content, mode, owner, link count, rename) falls in
 * or after the second in which the previous snapshot began. The source cannot change an entry
 * without moving its ctime to "now", so nothing changed since a snapshot began escapes the next
 * one; whole seconds keep that true on filesystems that store coarser times than the clock that
 * marked the start (an entry changed in that same second is merely sent once more). On the target,
 * anything the source's latest snapshot lacks, or has with another type, is removed first (so a
 * file created and deleted between two snapshots, but caught by a copy, does not linger).
 */

export const MOUNT = '/berth-volume';
const W = '/tmp/berth-sync';

/** Times as UTC text compare in order; the helpers' image has no zone of its own anyway. */
const STRICT = 'set -e; set -o pipefail; export TZ=UTC0';
/** Lines are entries: a name with a newline could pass for two entries, so it refuses the copy. */
const NO_NEWLINE_NAMES = `nl='
'
if [ -n "$(find . -name "*$nl*" | head -n 1)" ]; then echo 'a file name contains a newline; such volumes cannot be copied' >&2; exit 5; fi`;

/** Entries as `t|ctime|size|path`, directories first (so a tar of changes creates parents first). */
const SNAPSHOT = (out: string) => `{ find . -type d -exec stat -c 'd|%z|0|%n' {} + &&
  find . -type f -exec stat -c 'f|%z|%s|%n' {} + &&
  find . ! -type f ! -type d ! -type s -exec stat -c 'o|%z|%s|%n' {} + ; } > ${out}`;

/** The path of a `t|ctime|size|path` line (paths may contain `|`). */
const AWK_PATH = 'function path(l) { l = substr(l, index(l, "|") + 1); l = substr(l, index(l, "|") + 1); return substr(l, index(l, "|") + 1) }';

/**
 * The snapshot and choice every round makes on the source: a new snapshot, the entries to send
 * (`changed`: `size|path`, in batch files of names the shell can pass to tar at once), and
 * W/stats: `<entries> <total file bytes> <changed entries> <changed bytes> <batches>`.
 * `first`: nothing is chosen (the first round sends everything by a plain archive).
 */
const SNAPSHOT_AND_CHOOSE = (first: boolean) => `${NO_NEWLINE_NAMES}
mkdir -p ${W}/out; rm -f ${W}/out/* ${W}/batch.*
touch ${W}/mark; stat -c %z ${W}/mark | cut -c 1-19 > ${W}/start.new
${SNAPSHOT(`${W}/snap.new`)}
${
  first
    ? `: > ${W}/changed`
    : `awk -F'|' -v since="$(cat ${W}/start)" '${AWK_PATH}
  NR == FNR { seen[path($0)] = 1; next }
  { p = path($0); if (!(p in seen) || ("" $2) >= since) print $3 "|" p }' ${W}/snap ${W}/snap.new > ${W}/changed`
}
if [ -f ${W}/start ]; then cp ${W}/start ${W}/start.prev; fi
mv ${W}/snap.new ${W}/snap; mv ${W}/start.new ${W}/start
cp ${W}/snap ${W}/out/snap
awk -v dir=${W} 'BEGIN { n = 0; b = 0 } { p = substr($0, index($0, "|") + 1); if (b > 0 && b + length(p) > 131072) { n++; b = 0 } print p > (dir "/batch." n); b += length(p) + 1 }' ${W}/changed
echo "$(wc -l < ${W}/snap) $(awk -F'|' '$1 == "f" { s += $3 } END { printf "%.0f", s }' ${W}/snap) $(wc -l < ${W}/changed) $(awk -F'|' '{ s += $1 } END { printf "%.0f", s }' ${W}/changed) $(ls ${W} | grep -c '^batch\\.' || true)" > ${W}/out/stats`;

/** Source, every round while it may be in use: snapshot and choice; prints W/out/stats. */
export const sourceRound = (first: boolean) => `${STRICT}; cd ${MOUNT}
${SNAPSHOT_AND_CHOOSE(first)}
cat ${W}/out/stats`;

/**
 * Source, after a round that did not deliver all its batches: the next round chooses again from
 * the previous round's start, so everything this one may have missed is sent then.
 */
export const sourceChooseAgain = `${STRICT}; if [ -f ${W}/start.prev ]; then cp ${W}/start.prev ${W}/start; fi`;

/**
 * Source: one batch of changed entries as a tar on stdout (names from a file, no recursion).
 * While the source is in use an entry may vanish after the snapshot: it is skipped (the target
 * loses it at the next round, whose snapshot lacks it); one that vanishes while tar runs makes
 * tar complain, which the caller tolerates then.
 */
const BATCH_ARGS = (file: string) => `set --
while IFS= read -r p; do if [ -e "$p" ] || [ -L "$p" ]; then set -- "$@" "$p"; fi; done < ${file}
# All of them gone: the volume root alone (a tar needs one entry; sending it changes nothing).
[ $# -gt 0 ] || set -- .`;

export const sourceBatch = (n: number) => `cd ${MOUNT}
${BATCH_ARGS(`${W}/batch.${n}`)}
exec tar -cf - --no-recursion -- "$@"`;

/**
 * Target, before changes arrive: removes what the source's snapshot (uploaded to W/out/snap)
 * lacks or has with another type, deepest paths first. Prints how many it removed.
 */
export const targetPrune = `${STRICT}; cd ${MOUNT}
${SNAPSHOT(`${W}/mine`)}
awk -F'|' '${AWK_PATH}
  NR == FNR { type[path($0)] = $1; next }
  { p = path($0); if (p != "." && type[p] != $1) print p }' ${W}/out/snap ${W}/mine | sort -r > ${W}/remove
while IFS= read -r p; do rm -rf -- "$p"; done < ${W}/remove
wc -l < ${W}/remove`;

/**
 * Verification lists, the same on both sides: one line per entry (type, size and link count of
 * files, permissions, owner, link targets), sorted bytewise; directory sizes and times are left
 * out (they differ between filesystems). And every entry's `uid:gid:mode:path`, for the target to
 * mend what an archive did not carry (podman's archives lose owners).
 */
const LIST = (out: string) => `{ find . -type f -exec stat -c 'f|%s|%a|%u:%g|%h|%n' {} + &&
  find . -type d -exec stat -c 'd|-|%a|%u:%g|-|%n' {} + &&
  find . ! -type f ! -type d ! -type s -exec stat -c '%F|%s|%a|%u:%g|-|%N' {} + ; } | LC_ALL=C sort > ${out}`;
const META = (out: string) => `find . -exec stat -c '%u:%g:%a:%n' {} + | LC_ALL=C sort > ${out}`;
/** `<entries> <files> <bytes> <sha256 of the list>` (to be echoed). */
const SUMMARY = (list: string) =>
  `$(wc -l < ${list}) $(awk -F'|' '$1 == "f" { n++; s += $2 } END { printf "%d %.0f", n, s }' ${list}) $(sha256sum < ${list} | cut -d ' ' -f 1)`;

/** Source, last: the verification lists into W/out (next to the snapshot); prints the summary. */
export const sourceLists = `${STRICT}; cd ${MOUNT}; mkdir -p ${W}/out
${LIST(`${W}/out/list`)}
${META(`${W}/out/meta`)}
echo "${SUMMARY(`${W}/out/list`)}"`;

/** Mends every entry whose `uid:gid:mode` differs from the source's META list (W/out/meta). */
const MEND = `${META(`${W}/meta`)}
awk -F: 'NR == FNR { m[$0] = 1; next } !($0 in m)' ${W}/meta ${W}/out/meta > ${W}/mend
while IFS= read -r line; do
  u=\${line%%:*}; r=\${line#*:}; g=\${r%%:*}; r=\${r#*:}; m=\${r%%:*}; p=\${r#*:}
  [ -e "$p" ] || [ -L "$p" ] || continue
  chown -h "$u:$g" "$p" || exit 3
  if [ ! -L "$p" ]; then chmod "$m" "$p" || exit 4; fi
done < ${W}/mend`;

/**
 * Target, last: mends owners and modes that differ from the source's (chown first: it clears
 * setuid/setgid; symlinks only chown -h), lists itself and prints `<mended> <summary>`, then the
 * first differing lines on stderr.
 */
export const targetVerify = `${STRICT}; cd ${MOUNT}
${MEND}
${LIST(`${W}/list`)}
echo "$(wc -l < ${W}/mend) ${SUMMARY(`${W}/list`)}"
cmp -s ${W}/out/list ${W}/list || diff ${W}/out/list ${W}/list | grep '^[-+][^-+]' | head -n 20 >&2 || true`;

/**
 * Source, the last pass (it is stopped, so nothing moves): snapshot and choice, the verification
 * lists, and the changed entries as tars, all in W/out; then W/out itself as one tar on stdout.
 * One exec and one upload carry everything the target needs: the pause is made of round trips.
 */
export const sourceFinal = `${STRICT}; cd ${MOUNT}
${SNAPSHOT_AND_CHOOSE(false)}
${LIST(`${W}/out/list`)}
${META(`${W}/out/meta`)}
n=0; for b in ${W}/batch.*; do [ -e "$b" ] || break; (${BATCH_ARGS('"$b"')}; exec tar -cf ${W}/out/delta.$n.tar --no-recursion -- "$@"); n=$((n + 1)); done
exec tar -cf - -C ${W} out`;

/**
 * Target, the last pass: removes what the source lacks, extracts the changes (owners and modes
 * as the source's tar recorded them), mends what still differs, lists itself. Prints the source's
 * stats, then `<mended> <target summary> <source summary>`; the first differing lines on stderr.
 */
export const targetFinal = `${STRICT}; cd ${MOUNT}
${SNAPSHOT(`${W}/mine`)}
awk -F'|' '${AWK_PATH}
  NR == FNR { type[path($0)] = $1; next }
  { p = path($0); if (p != "." && type[p] != $1) print p }' ${W}/out/snap ${W}/mine | sort -r > ${W}/remove
while IFS= read -r p; do rm -rf -- "$p"; done < ${W}/remove
for t in ${W}/out/delta.*.tar; do [ -e "$t" ] || break; tar -xf "$t" -C ${MOUNT}; done
${MEND}
${LIST(`${W}/list`)}
echo "$(cat ${W}/out/stats) $(wc -l < ${W}/remove) $(wc -l < ${W}/mend) ${SUMMARY(`${W}/list`)} ${SUMMARY(`${W}/out/list`)}"
cmp -s ${W}/out/list ${W}/list || diff ${W}/out/list ${W}/list | grep '^[-+][^-+]' | head -n 20 >&2 || true`;

/** Either side, on request: every regular file's sha256, sorted by path; prints the list's own sha256. */
export const checksums = `${STRICT}; cd ${MOUNT}
find . -type f -exec sha256sum {} + | LC_ALL=C sort -k 2 > ${W}/sums
echo "$(wc -l < ${W}/sums) $(sha256sum < ${W}/sums | cut -d ' ' -f 1)"`;

/** Target, before the first round: whether the volume holds anything. */
export const isEmpty = `cd ${MOUNT} && [ -z "$(find . -mindepth 1 | head -n 1)" ] && echo empty || echo not-empty`;

/** The helpers' long-running command: idle until removed (a TERM ends it at once). */
export const IDLE = ['sh', '-c', "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];

/** Where the target takes the source's W/out (archive PUT of that directory into W). */
export const OUT_DIR = `${W}/out`;
export const WORK_DIR = W;
