/**
 * The shell scripts a volume sync runs inside its two helper containers (busybox: sh, find, stat,
 * awk, sort, tar, sha256sum). Kept apart from the code that drives them so each is read whole.
 *
 * Files in the helpers' own filesystem (never in the volumes), under W:
 *   snap    one line per entry of the source: `<t>|<ctime>|<size>|<path>`, t = d (directory),
 *           f (regular file) or o (anything else but sockets), ctime as `YYYY-MM-DD hh:mm:ss.n…`
 *           in UTC; directories first
 *   start   the second (`YYYY-MM-DD hh:mm:ss`, UTC) in which that snapshot began, read off a file
 *           touched just before it; start_s the same second since the epoch
 *   out/    what the target needs: `snap` again, and for the final pass the verification lists
 *           (and block patches of files rewritten in place)
 *   back/   what the target sends back after the preparation: the paths where both sides' lists
 *           differed (`dpaths`) and `base/`, its copies of the hot files
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

/**
 * Entries as `t|ctime|size|path`, directories first (so a tar of changes creates parents first).
 * A directory's "size" is its inode: a directory renamed over another's path keeps its children's
 * change times and paths, so only a new inode at the same path tells that its subtree is new.
 */
const SNAPSHOT = (out: string) => `{ find . -type d -exec stat -c 'd|%z|%i|%n' {} + &&
  find . -type f -exec stat -c 'f|%z|%s|%n' {} + &&
  find . ! -type f ! -type d ! -type s -exec stat -c 'o|%z|%s|%n' {} + ; } > ${out}`;

/** The path of a `t|ctime|size|path` line (paths may contain `|`). */
const AWK_PATH = 'function path(l) { l = substr(l, index(l, "|") + 1); l = substr(l, index(l, "|") + 1); return substr(l, index(l, "|") + 1) }';

/** awk over `t|…|size|…` lines: about what a tar of those entries takes (headers, padded contents, end blocks). */
const TAR_SIZE = '{ n += 512; if ($1 == "f") n += int(($3 + 511) / 512) * 512 } END { printf "%.0f", n + 10240 }';

/**
 * The snapshot and choice every round makes on the source: a new snapshot, the entries to send
 * (`changed`: `size|path`, in batch files of names the shell can pass to tar at once), and
 * W/stats: `<entries> <total file bytes> <changed entries> <changed bytes> <batches>`.
 * `first`: nothing is chosen (the first round sends everything by a plain archive).
 */
const SNAPSHOT_AND_CHOOSE = (first: boolean, inUse: boolean) => `${NO_NEWLINE_NAMES}
mkdir -p ${W}/out; rm -f ${W}/out/* ${W}/batch.*
touch ${W}/mark; stat -c %z ${W}/mark | cut -c 1-19 > ${W}/start.new; stat -c %Z ${W}/mark > ${W}/start_s.new
${inUse ? LIVE(SNAPSHOT(`${W}/snap.new`)) : SNAPSHOT(`${W}/snap.new`)}
${
  first
    ? `: > ${W}/changed`
    : `awk -F'|' -v since="$(cat ${W}/start)" -v dir=${W} '${AWK_PATH}
  FILENAME == dir "/snap" { p = path($0); seen[p] = 1; if ($1 == "d") ino[p] = $3; next }
  { p = path($0)
    if ($1 == "d" && (p in ino) && ino[p] != $3) { swapped[p] = 1; nsw++ }
    hit = !(p in seen) || ("" $2) >= since
    # Under a directory swapped in since (directories come first, parents before children).
    if (!hit && nsw > 0) { q = p; for (;;) { i = length(q); while (i > 0 && substr(q, i, 1) != "/") i--; if (i <= 1) break; q = substr(q, 1, i - 1); if (q in swapped) { hit = 1; break } } }
    if (hit) print ($1 == "d" ? 0 : $3) "|" p }' ${W}/snap ${W}/snap.new > ${W}/changed`
}
if [ -f ${W}/start ]; then cp ${W}/start ${W}/start.prev; cp ${W}/start_s ${W}/start_s.prev; fi
mv ${W}/snap.new ${W}/snap; mv ${W}/start.new ${W}/start; mv ${W}/start_s.new ${W}/start_s
cp ${W}/snap ${W}/out/snap
awk -v dir=${W} 'BEGIN { n = 0; b = 0 } { p = substr($0, index($0, "|") + 1); if (b > 0 && b + length(p) > 131072) { n++; b = 0 } print p > (dir "/batch." n); b += length(p) + 1 }' ${W}/changed
echo "$(wc -l < ${W}/snap) $(awk -F'|' '$1 == "f" { s += $3 } END { printf "%.0f", s }' ${W}/snap) $(wc -l < ${W}/changed) $(awk -F'|' '{ s += $1 } END { printf "%.0f", s }' ${W}/changed) $(ls ${W} | grep -c '^batch\\.' || true) $(awk -F'|' '${TAR_SIZE}' ${W}/snap) $(awk -F'|' '{ $0 = "f|0|" $0 } ${TAR_SIZE}' ${W}/changed)" > ${W}/out/stats`;

/**
 * Source, every round: snapshot and choice; prints W/out/stats. `inUse`: an entry removed while
 * the snapshot walks (a writer's temporary file) is left out, as LIVE lists do, instead of failing
 * the round (seen under load: find's own "No such file or directory"); the next round, or the
 * final pass with the source stopped and checked strictly, sees what is there.
 */
export const sourceRound = (first: boolean, inUse = false) => `${STRICT}; cd ${MOUNT}
${SNAPSHOT_AND_CHOOSE(first, inUse)}
cat ${W}/out/stats`;

/**
 * Source, after a round that did not deliver all its batches: the next round chooses again from
 * the previous round's start, so everything this one may have missed is sent then.
 */
export const sourceChooseAgain = `${STRICT}; if [ -f ${W}/start.prev ]; then cp ${W}/start.prev ${W}/start; cp ${W}/start_s.prev ${W}/start_s; fi`;

/** Source, after a first round that did not deliver its archive: the next round sends everything. */
export const sourceChooseAll = `${STRICT}; echo '0000-00-00 00:00:00' > ${W}/start; echo 0 > ${W}/start_s`;

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
 * lacks or has with another type, deepest paths first; and lists in W/missing, in the snapshot's
 * order (directories first), what the snapshot has and this side lacks (or has with another type)
 * now. An engine's archive of a volume in use can end early and still look whole (podman 4.3:
 * 200, a closed tar, a fraction of the entries, when a file shrinks as it is read), and what it
 * left out has not changed since: only this comparison sends it again. Prints
 * `<removed> <missing>`.
 */
export const targetPrune = `${STRICT}; cd ${MOUNT}
${SNAPSHOT(`${W}/mine`)}
awk -F'|' -v dir=${W} '${AWK_PATH}
  FILENAME == dir "/out/snap" { type[path($0)] = $1; next }
  { p = path($0); if (p != "." && type[p] != $1) print p }' ${W}/out/snap ${W}/mine | sort -r > ${W}/remove
while IFS= read -r p; do rm -rf -- "$p"; done < ${W}/remove
awk -F'|' -v dir=${W} '${AWK_PATH}
  FILENAME == dir "/mine" { type[path($0)] = $1; next }
  { p = path($0); if (p != "." && type[p] != $1) print p }' ${W}/mine ${W}/out/snap > ${W}/missing
echo "$(wc -l < ${W}/remove) $(wc -l < ${W}/missing)"`;

/**
 * Source, when the target lacks entries this round did not choose (W/missing, from targetPrune):
 * more batch files after the round's own, of those not already in them. Prints the batch count.
 */
export const sourceAddMissing = `${STRICT}
n=$(ls ${W} | grep -c '^batch\\.' || true)
awk -v dir=${W} -v n="$n" 'BEGIN { b = 0 }
  FILENAME == dir "/changed" { seen[substr($0, index($0, "|") + 1)] = 1; next }
  !($0 in seen) { if (b > 0 && b + length($0) > 131072) { n++; b = 0 } print > (dir "/batch." n); b += length($0) + 1 }
  END { print (b > 0 ? n + 1 : n) }' ${W}/changed ${W}/missing`;

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
const SUMMARY = (list: string) => `$(wc -l < ${list}) $(awk -F'|' '$1 == "f" { n++; s += $2 } END { printf "%d %.0f", n, s }' ${list}) $(sha256sum < ${list} | cut -d ' ' -f 1)`;

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
 * The path of a LIST line (after its fifth `|`; a symlink's `'path' -> 'target'` gives its path).
 * A name that itself holds `' -> '` reads wrong, which can only make a verification fail.
 */
const AWK_LPATH = `function lpath(l,  k, i) { for (k = 0; k < 5; k++) l = substr(l, index(l, "|") + 1)
  if (substr(l, 1, 1) == "\\047") { i = index(l, "\\047 -> \\047"); if (i > 0) return substr(l, 2, i - 2) }
  return l }`;

/**
 * A LIST or META of a source in use: an entry removed while it is listed is left out (stat
 * complains, and that is no failure); the final pass finds it changed or gone on both sides.
 */
const LIVE = (script: string) =>
  script
    .replace(/\{\} \+ &&/g, '{} + 2>/dev/null || true;')
    .replace(/\{\} \+ ; \}/g, '{} + 2>/dev/null || true; }')
    .replace(/^find \. -exec (.*) \{\} \+ \|/, '{ find . -exec $1 {} + 2>/dev/null || true; } |');

/**
 * Files rewritten in place (a database, a big file a writer patches) are sent in the final pass as
 * the blocks that differ from the target's copy, not whole. "Hot": regular files of at least
 * HOT_MIN bytes that the latest round sent again (W/changed: `size|path`), at most HOT_COUNT of
 * them and HOT_BYTES together; the target copies its version of each (W/back/base, sent back to
 * the source with the prepared paths) while the source still runs, so the pause compares two
 * local files instead of carrying one across.
 */
const HOT_MIN = 262_144;
const HOT_COUNT = 64;
const HOT_BYTES = 268_435_456;
/** The unit of a block delta: a page of most filesystems and databases. */
const BLOCK = 4096;
const HOT_CHOICE = `awk -F'|' 'BEGIN { n = 0; t = 0 } $1 >= ${HOT_MIN} && n < ${HOT_COUNT} && t + $1 <= ${HOT_BYTES} { n++; t += $1; print substr($0, index($0, "|") + 1) }' ${W}/changed > ${W}/out/hot`;

/**
 * Source, after the last round while it runs: its verification lists (W/out/list, W/out/meta)
 * for the target to mend owners and note where the two differ now. Off the pause: the final pass
 * then checks only what changed after this round's snapshot began.
 */
export const sourcePrepare = `${STRICT}; cd ${MOUNT}; rm -rf ${W}/out ${W}/back; mkdir -p ${W}/out; touch ${W}/changed
${HOT_CHOICE}
${LIVE(LIST(`${W}/out/list`))}
${LIVE(META(`${W}/out/meta`))}
echo "${SUMMARY(`${W}/out/list`)}"`;

/**
 * Target, after sourcePrepare's lists arrived: mends owners and modes, lists itself, and keeps the
 * paths whose lines differ from the source's (W/dpaths: all must be among what the final pass
 * sends or removes) and the source's list (W/slist, for the totals). Prints how many differ.
 */
export const targetPrepare = `${STRICT}; cd ${MOUNT}
${MEND}
${LIST(`${W}/list`)}
cp ${W}/out/list ${W}/slist
awk '${AWK_LPATH}
  NR == FNR { s[$0] = 1; next }
  { if ($0 in s) delete s[$0]; else d[lpath($0)] = 1 }
  END { for (l in s) d[lpath(l)] = 1; for (p in d) print p }' ${W}/slist ${W}/list > ${W}/dpaths
rm -rf ${W}/back; mkdir -p ${W}/back/base; cp ${W}/dpaths ${W}/back/dpaths; touch ${W}/out/hot
# Its copy of each hot file that is a regular file with one link here (patching a file in place
# changes every name of it), for the source to compare against in the final pass.
awk -F'|' -v dir=${W} '${AWK_LPATH}
  FILENAME == dir "/out/hot" { hot[$0] = 1; next }
  $1 == "f" && $5 == 1 { p = lpath($0); if (p in hot) print p }' ${W}/out/hot ${W}/list > ${W}/hot
if [ -s ${W}/hot ]; then (${BATCH_ARGS(`${W}/hot`)}; exec tar -cf - --no-recursion -- "$@") | tar -xf - -C ${W}/back/base; fi
awk -F'|' '${AWK_LPATH}
  { print ($1 == "f" ? "f|" $2 : "x|0") "|" lpath($0) }' ${W}/slist > ${W}/sidx
awk -F'|' '{ e++; if ($1 == "f") { f++; b += $2 } } END { printf "%d %d %.0f", e, f, b }' ${W}/sidx > ${W}/stot
wc -l < ${W}/dpaths`;

/** Lines of LIST for the paths in files (one a line) of regular files, directories and the rest. */
const LIST_OF = (f: string, d: string, o: string) => `{ tr '\\n' '\\0' < ${f} | xargs -0 -r stat -c 'f|%s|%a|%u:%g|%h|%n'
  tr '\\n' '\\0' < ${d} | xargs -0 -r stat -c 'd|-|%a|%u:%g|-|%n'
  tr '\\n' '\\0' < ${o} | xargs -0 -r stat -c '%F|%s|%a|%u:%g|-|%N' ; }`;

/** awk: the path of a `t|size|path` line (paths may contain `|`). */
const AWK_CPATH = 'function cpath(l) { return substr(l, index(substr(l, 3), "|") + 3) }';

/** Splits W/out/changed (`t|size|path`) into W/cf, W/cd, W/co (paths), directories sorted (parents first). */
const SPLIT_CHANGED = `awk -v dir=${W} '${AWK_CPATH} { t = substr($0, 1, 1); p = cpath($0); print p > (dir "/c" t) }
  END { close(dir "/cf"); close(dir "/cd"); close(dir "/co") }' ${W}/out/changed
for t in f d o; do touch ${W}/c$t; done
LC_ALL=C sort ${W}/cd > ${W}/cd.sorted; mv ${W}/cd.sorted ${W}/cd`;

/**
 * The snapshot's lines that can concern the paths in a file (lines `<a>|<b>|<c>|path`, as the
 * walk writes them): every line containing `|<path>` — the path's own line, and its children's, which
 * start with it. Picked by grep -F (C, one pass) so the awk that decides reads a handful of lines,
 * not the whole snapshot: the last pass stays proportional to the change. A superset (a longer
 * name that starts with the same characters) is harmless: the awk compares whole paths. busybox
 * grep tries every pattern on every line: past a few hundred paths the whole snapshot is cheaper.
 */
const SNAP_LINES_OF = (file: string, out: string) => `awk '{ i = index($0, "|"); i += index(substr($0, i + 1), "|"); i += index(substr($0, i + 1), "|"); print substr($0, i) }' ${file} > ${out}.pat
n=$(wc -l < ${out}.pat)
if [ "$n" -gt 256 ]; then cp ${W}/snap ${out}; elif [ "$n" -gt 0 ]; then grep -F -f ${out}.pat ${W}/snap > ${out} || [ $? -eq 1 ]; else : > ${out}; fi`;

/**
 * What an armed final pass writes on stderr once its shell runs: the engine answers an exec's
 * start before its process is running (0.3–0.7 s of runc on a busy machine), and armFinal waits
 * for this line so that start-up is over before the source stops.
 */
export const ARMED_MARK = 'berth-final-pass-armed';

/**
 * The final pass's execs start before the source is stopped (starting one costs 0.3–0.7 s of
 * podman and runc on a busy machine, all of it inside the pause otherwise). The target's waits
 * here until a file appears (the end mark of the archive the source sends): polled every 10 ms by
 * the shell alone (a read with a timeout on a FIFO nobody writes), no process per poll. Bounded
 * (an hour) in case it never comes; close() removes the helpers anyway.
 */
const AWAIT = (file: string) => `mkdir -p ${W}; [ -p ${W}/tick ] || mkfifo ${W}/tick
echo ${ARMED_MARK} >&2
i=0; while [ ! -e ${file} ]; do i=$((i + 1)); if [ $i -gt 360000 ]; then echo 'the final pass was never started' >&2; exit 9; fi; read -t 0.01 x <> ${W}/tick || true; done`;

/**
 * The source's final pass waits on its stdin (VolumeSync.armFinal starts it with its input open):
 * berth writes one line when the source has stopped, which reaches the shell at once with no
 * engine call. End of file (berth went away, or gave up) ends it without sending anything.
 */
const AWAIT_INPUT = `echo ${ARMED_MARK} >&2
if ! read -r go || [ "$go" != go ]; then echo 'the final pass was never started' >&2; exit 9; fi`;

/**
 * awk over `cmp -l` of a hot file's target copy (-v bs: its size) and the source's file (-v s),
 * ending with a line `rc=<cmp's status>`: the differing BLOCKs as runs `first:count,…`, `-` when
 * none, or `whole` — cmp failed, or the change is too large to be worth it (more than
 * PATCH_BLOCKS blocks, or PATCH_LINES differing bytes read: busybox awk takes ~1 µs a line, so a
 * file rewritten throughout is given up on within tens of ms). A file that grew gets its new tail.
 */
const PATCH_BLOCKS = 64;
const PATCH_LINES = 65_536;
const AWK_RUNS = `BEGIN { n = 0; last = -2; rc = -1; tot = 0; over = 0 }
  /^rc=/ { rc = substr($0, 4) + 0; next }
  { if (NR > ${PATCH_LINES}) { over = 1; exit }
    b = int(($1 - 1) / ${BLOCK}); if (b == last) next
    if (++tot > ${PATCH_BLOCKS}) { over = 1; exit }
    if (n > 0 && b == last + 1) c[n]++; else { n++; st[n] = b; c[n] = 1 }
    last = b }
  END { if (over || (rc != 0 && rc != 1)) { print "whole"; exit }
    if (s > bs) { t = int(bs / ${BLOCK}); e = int((s - 1) / ${BLOCK})
      if (n > 0 && st[n] + c[n] >= t) { if (e - st[n] + 1 > c[n]) c[n] = e - st[n] + 1 } else { n++; st[n] = t; c[n] = e - t + 1 } }
    o = ""; for (i = 1; i <= n; i++) o = o (i > 1 ? "," : "") st[i] ":" c[i]; print (n > 0 ? o : "-") }`;

/**
 * Source, final pass: the changed regular files (W/cf) with a target copy (W/back/base) become
 * block patches: W/out/patch.K holds the differing blocks in order, W/out/patch a line each
 * `K|size|copy's size|mtime|md5|runs|path` (path last: it may hold `|`), W/patched their paths
 * (not archived). The whole file's md5 lets the target check the result, so a wrong patch fails
 * the verification instead of passing silently.
 */
const SOURCE_PATCHES = `: > ${W}/out/patch; : > ${W}/patched; k=0
while IFS= read -r p; do
  b="${W}/back/base/\${p#./}"
  [ -f "$b" ] && [ "$(stat -c %h "$p")" = 1 ] || continue
  s=$(stat -c %s "$p"); bs=$(stat -c %s "$b")
  md5sum < "$p" > ${W}/sum & m5=$!
  runs=$({ cmp -l "$b" "$p" 2>/dev/null && echo rc=0 || echo "rc=$?"; } | awk -v bs="$bs" -v s="$s" '${AWK_RUNS}') || runs=whole
  # Sent whole after all: its md5 is not needed (a big file would be read through for nothing).
  if [ "$runs" = whole ]; then kill $m5 2>/dev/null || true; wait $m5 || true; continue; fi
  wait $m5
  : > ${W}/out/patch.$k
  if [ "$runs" != - ]; then for r in $(echo "$runs" | tr , ' '); do dd if="$p" bs=${BLOCK} skip=\${r%:*} count=\${r#*:} 2>/dev/null; done > ${W}/out/patch.$k; fi
  printf '%s|%s|%s|%s|%s|%s|%s\n' $k $s $bs "$(stat -c %Y "$p")" "$(cut -d ' ' -f 1 ${W}/sum)" "$runs" "$p" >> ${W}/out/patch
  printf '%s\n' "$p" >> ${W}/patched
  k=$((k + 1))
done < ${W}/cf`;

/**
 * Target, final pass: applies W/out/patch (SOURCE_PATCHES) where its copy is still the one the
 * source compared against (same size), then checks each file's md5; a mismatch is a problem.
 */
const TARGET_PATCHES = `while IFS= read -r line; do
  k=\${line%%|*}; r=\${line#*|}; s=\${r%%|*}; r=\${r#*|}; bs=\${r%%|*}; r=\${r#*|}; mt=\${r%%|*}; r=\${r#*|}; sum=\${r%%|*}; r=\${r#*|}; runs=\${r%%|*}; p=\${r#*|}
  if [ ! -f "$p" ] || [ -L "$p" ] || [ "$(stat -c %s "$p")" != "$bs" ]; then bad=$((bad + 1)); echo "patched on the source, but its copy here changed: $p" >&2; continue; fi
  o=0
  if [ "$runs" != - ]; then for r in $(echo "$runs" | tr , ' '); do dd if=${W}/out/patch.$k of="$p" bs=${BLOCK} skip=$o seek=\${r%:*} count=\${r#*:} conv=notrunc 2>/dev/null; o=$((o + \${r#*:})); done; fi
  truncate -s "$s" "$p"
  if [ "$(md5sum < "$p" | cut -d ' ' -f 1)" != "$sum" ]; then bad=$((bad + 1)); echo "patched file differs from the source's: $p" >&2; fi
  touch -d "@$mt" "$p"
done < ${W}/out/patch`;

/** awk: an entry's type letter (d, f, o) from stat's %F. */
const AWK_TYPE = 'function t(f) { return f == "directory" ? "d" : f ~ /^regular/ ? "f" : "o" }';
/** The final pass's walk lines: type, change time (epoch seconds), `size:inode`, path. */
const WALK_LINE = '%F|%Z|%s:%i|%n';

/**
 * Source, the last pass (it is stopped, so nothing moves), in time proportional to what changed
 * since the last round's snapshot began (second S), not to the volume:
 * - candidates: one walk (lstat only) for entries whose ctime is within the last minutes, then
 *   exactly those changed in or after S (the rule above), plus the children of a changed directory
 *   that the snapshot lacks (or has with another type or inode), plus the whole subtree of a
 *   directory new since then (a directory moved in keeps its children's ctimes);
 * - removed: children the last snapshot had under a changed directory (removing or renaming an
 *   entry changes its directory) that it no longer has, and entries whose type changed;
 * - their verification lines and owners, and their tars; all in W/out, sent as one tar on stdout.
 */
export const sourceFinal = (pass: number) => `${STRICT}; cd ${MOUNT}
${AWAIT_INPUT}
: T:src-begin
rm -rf ${W}/out; mkdir -p ${W}/out; rm -f ${W}/c? ${W}/batch.* ${W}/end.* ${W}/newline ${W}/kids ${W}/changed2 ${W}/newdirs2
since=$(cat ${W}/start_s)
m=$(( ($(date +%s) - since) / 60 + 2 ))
nl='
'
# One walk: names with a newline are only marked (lines are entries), the rest listed. Change
# times as seconds since the epoch (%Z): formatting them as dates (%z) was a third of the walk.
find . -cmin -$m -name "*$nl*" -exec touch ${W}/newline \\; -o -cmin -$m ! -type s -exec stat -c '${WALK_LINE}' {} + > ${W}/cand
if [ -e ${W}/newline ]; then echo 'a file name contains a newline; such volumes cannot be copied' >&2; exit 5; fi
: T:src-cand-walk
# The walk's window is whole minutes: a volume filled minutes ago is all in it. Only entries
# changed in or after S's second are changes; one the snapshot lacks is among them too (creating,
# linking or renaming an entry sets its change time), so the snapshot is read for these alone.
# Once: their lines hold every line under them too (the children of a changed directory, the
# subtree of one swapped in), all that the steps below look up.
awk -F'|' -v since="$since" '$2 + 0 >= since + 0' ${W}/cand > ${W}/recent
${SNAP_LINES_OF(`${W}/recent`, `${W}/oldc`)}
: T:src-grep-snap
awk -F'|' -v dir=${W} '${AWK_PATH}
  ${AWK_TYPE}
  FILENAME == dir "/oldc" { p = path($0); old[p] = $1; if ($1 == "d") ino[p] = $3; next }
  { p = path($0); ty = t($1)
    k = index($3, ":"); size = substr($3, 1, k - 1)
    print ty "|" (ty == "d" ? 0 : size) "|" p > (dir "/changed1")
    # New, or another directory renamed over this path: its whole subtree is sent.
    if (ty == "d") { print p > (dir "/cdirs"); if (!(p in old) || (old[p] == "d" && ino[p] != substr($3, k + 1))) print p > (dir "/newdirs") } }' ${W}/oldc ${W}/recent
touch ${W}/changed1 ${W}/cdirs ${W}/newdirs
: T:src-awk-snap-changed
# A name the snapshot lacks under a changed directory is new whatever its own change time: making a
# name changes its directory, not always the entry (XFS swaps two files with RENAME_EXCHANGE and
# leaves their times; a volume's times can come from another clock), and an entry the live
# snapshot missed is older than S. Likewise another type, or another directory, at a known name.
while IFS= read -r d; do find "$d" -mindepth 1 -maxdepth 1 ! -type s -exec stat -c '${WALK_LINE}' {} +; done < ${W}/cdirs > ${W}/kidsx
awk -F'|' -v dir=${W} '${AWK_PATH}
  ${AWK_TYPE}
  ${AWK_CPATH}
  FILENAME == dir "/changed1" { done[cpath($0)] = 1; next }
  FILENAME == dir "/oldc" { p = path($0); old[p] = $1; if ($1 == "d") ino[p] = $3; next }
  { p = path($0); print p > (dir "/kids"); if (p in done) next
    ty = t($1); k = index($3, ":")
    if ((p in old) && old[p] == ty && (ty != "d" || ino[p] == substr($3, k + 1))) next
    print ty "|" (ty == "d" ? 0 : substr($3, 1, k - 1)) "|" p > (dir "/changed2"); if (ty == "d") print p > (dir "/newdirs2") }' ${W}/changed1 ${W}/oldc ${W}/kidsx
touch ${W}/kids ${W}/changed2 ${W}/newdirs2; cat ${W}/changed2 >> ${W}/changed1; cat ${W}/newdirs2 >> ${W}/newdirs
: T:src-kids-new
while IFS= read -r d; do find "$d" -mindepth 1 ! -type s -exec stat -c '%F|%Z|%s|%n' {} +; done < ${W}/newdirs > ${W}/sub
: T:src-sub-kids
awk -F'|' -v dir=${W} '${AWK_PATH}
  ${AWK_TYPE}
  function parent(p,  i) { i = length(p); while (i > 0 && substr(p, i, 1) != "/") i--; return i > 1 ? substr(p, 1, i - 1) : "." }
  ${AWK_CPATH}
  FILENAME == dir "/changed1" { p = cpath($0); ch[p] = $1; line[p] = $0; next }
  FILENAME == dir "/sub" { p = path($0); if (!(p in ch)) { ch[p] = t($1); line[p] = ch[p] "|" $3 "|" p }; next }
  FILENAME == dir "/kids" { kid[$0] = 1; next }
  { p = path($0); if (p == ".") next
    if ((p in ch) ? ch[p] != $1 : (parent(p) in ch) && ch[parent(p)] == "d" && !(p in kid)) print p > (dir "/removed1") }
  END { for (p in line) print line[p] > (dir "/out/changed") }' ${W}/changed1 ${W}/sub ${W}/kids ${W}/oldc
touch ${W}/removed1 ${W}/out/changed
LC_ALL=C sort -r ${W}/removed1 > ${W}/out/removed
: T:src-awk-snap-removed
${SPLIT_CHANGED}
${LIST_OF(`${W}/cf`, `${W}/cd`, `${W}/co`)} | LC_ALL=C sort > ${W}/out/plist
cat ${W}/cd ${W}/cf ${W}/co | tr '\\n' '\\0' | xargs -0 -r stat -c '%u:%g:%a:%n' > ${W}/out/meta
: T:src-lists-meta
${SOURCE_PATCHES}
: T:src-patches
awk -v dir=${W} 'FILENAME == dir "/patched" { x[$0] = 1; next } !($0 in x)' ${W}/patched ${W}/cf > ${W}/cfa
cat ${W}/cd ${W}/cfa ${W}/co | awk -v dir=${W} 'BEGIN { n = 0; b = 0 } { if (b > 0 && b + length($0) > 131072) { n++; b = 0 } print > (dir "/batch." n); b += length($0) + 1 }'
n=0; for b in ${W}/batch.*; do [ -e "$b" ] || break; (${BATCH_ARGS('"$b"')}; exec tar -cf ${W}/out/delta.$n.tar --no-recursion -- "$@"); n=$((n + 1)); done
: T:src-delta-tars
# Paths the lists differed on at the preparation (W/dpaths, from the target) that are not sent
# again but exist: unchanged since S, so still different (the target reports them).
mkdir -p ${W}/back; touch ${W}/back/dpaths
awk -v dir=${W} '${AWK_CPATH} FILENAME == dir "/out/changed" { ok[cpath($0)] = 1; next } !($0 in ok)' ${W}/out/changed ${W}/back/dpaths |
  while IFS= read -r p; do if [ -e "$p" ] || [ -L "$p" ]; then printf '%s\n' "$p"; fi; done > ${W}/out/dstill
: T:src-dstill
# Sent bytes: the archived files' and the patches' (a patched file's size counts only in its list line).
pb=0; for f in ${W}/out/patch.*; do [ -e "$f" ] || break; pb=$((pb + $(stat -c %s "$f"))); done
echo "$(wc -l < ${W}/out/changed) $(awk -F'|' -v dir=${W} -v pb=$pb '${AWK_CPATH} FILENAME == dir "/patched" { x[$0] = 1; next } $1 == "f" && !(cpath($0) in x) { s += $2 } END { printf "%.0f", s + pb }' ${W}/patched ${W}/out/changed)" > ${W}/out/stats
: > ${W}/end.${pass}
exec tar -cf - -C ${W} out end.${pass}`;

/**
 * Target, the last pass: removes what the source removed, extracts the changes, sets their owners
 * and modes, lists them and compares with the source's lines; every path the two differed on
 * before the pass (W/dpaths) must be among those sent or removed, and no removed path may remain.
 * Prints `<sent entries> <sent bytes> <removed> <mended> <entries> <files> <bytes> <problems>`
 * (the totals: the prepared source list with the pass applied); the problems on stderr.
 */
export const targetFinal = (pass: number) => `${STRICT}; cd ${MOUNT}
${AWAIT(`${W}/end.${pass}`)}
: T:tgt-begin
rm -f ${W}/c?
while IFS= read -r p; do rm -rf -- "$p"; done < ${W}/out/removed
: T:tgt-removed
for t in ${W}/out/delta.*.tar; do [ -e "$t" ] || break; tar -xf "$t" -C ${MOUNT}; done
: T:tgt-extract
bad=0
touch ${W}/out/patch
${TARGET_PATCHES}
: T:tgt-patches
# Owners and modes: tar as root mostly set them already; only lines that still differ are mended
# (one stat for all, instead of a chown and a chmod process per entry).
awk '{ p = $0; for (k = 0; k < 3; k++) p = substr(p, index(p, ":") + 1); print p }' ${W}/out/meta | tr '\\n' '\\0' | xargs -0 -r stat -c '%u:%g:%a:%n' > ${W}/meta.now
awk 'NR == FNR { m[$0] = 1; next } !($0 in m)' ${W}/meta.now ${W}/out/meta > ${W}/mend
while IFS= read -r line; do
  u=\${line%%:*}; r=\${line#*:}; g=\${r%%:*}; r=\${r#*:}; m=\${r%%:*}; p=\${r#*:}
  chown -h "$u:$g" "$p" || exit 3
  if [ ! -L "$p" ]; then chmod "$m" "$p" || exit 4; fi
done < ${W}/mend
: T:tgt-chown
${SPLIT_CHANGED}
${LIST_OF(`${W}/cf`, `${W}/cd`, `${W}/co`)} 2>&1 | LC_ALL=C sort > ${W}/plist
: T:tgt-plist
if ! cmp -s ${W}/out/plist ${W}/plist; then bad=$((bad + 1)); diff ${W}/out/plist ${W}/plist | grep '^[-+][^-+]' | head -n 20 >&2 || true; fi
while IFS= read -r p; do if { [ -e "$p" ] || [ -L "$p" ]; } && ! grep -qxF -- "$p" ${W}/cd ${W}/cf ${W}/co; then bad=$((bad + 1)); echo "removed on the source, still here: $p" >&2; fi; done < ${W}/out/removed
: T:tgt-check-removed
awk -v dir=${W} '
  ${AWK_CPATH}
  FILENAME == dir "/out/changed" { ok[cpath($0)] = 1; next }
  FILENAME == dir "/out/removed" { gone[$0] = 1; next }
  { if ($0 in ok) next; p = $0; while (p != "." && p != "") { if (p in gone) next; i = length(p); while (i > 0 && substr(p, i, 1) != "/") i--; p = i > 1 ? substr(p, 1, i - 1) : "." }
    print }' ${W}/out/changed ${W}/out/removed ${W}/dpaths > ${W}/dleft
: T:tgt-dleft
# Each is fine only when neither side has it now (made and removed on the source since S).
: > ${W}/dgone
while IFS= read -r p; do
  if grep -qxF -- "$p" ${W}/out/dstill || [ -e "$p" ] || [ -L "$p" ]; then bad=$((bad + 1)); echo "differs and was not sent again: $p (source $(awk -v p="$p" '${AWK_LPATH} lpath($0) == p' ${W}/slist | head -n 1), here $(awk -v p="$p" '${AWK_LPATH} lpath($0) == p' ${W}/list | head -n 1))" >&2; else printf '%s\n' "$p" >> ${W}/dgone; fi
done < ${W}/dleft
: T:tgt-dgone
# The totals: the prepared source list (W/sidx, \`t|size|path\`, made and summed in W/stot before
# the stop) less its lines sent again, gone, or under a gone path, plus the pass's own list. The
# lines that can be dropped all hold \`|<path>\` of a sent or removed path: picked by grep -F when
# those are few, so this reads the change, not the volume.
awk -v dir=${W} '${AWK_CPATH} FILENAME == dir "/out/changed" { print "|" cpath($0); next } { print "|" $0 }' ${W}/out/changed ${W}/dgone ${W}/out/removed > ${W}/tpat
if [ "$(wc -l < ${W}/tpat)" -gt 256 ]; then part=0; cp ${W}/sidx ${W}/sidx.sub; else part=1; grep -F -f ${W}/tpat ${W}/sidx > ${W}/sidx.sub || [ $? -eq 1 ]; fi
totals=$(awk -F'|' -v dir=${W} -v part=$part -v base="$(cat ${W}/stot)" '
  ${AWK_CPATH}
  FILENAME == dir "/out/changed" { ok[cpath($0)] = 1; next }
  FILENAME == dir "/dgone" { ok[$0] = 1; next }
  FILENAME == dir "/out/removed" { gone[$0] = 1; g[++ng] = $0 "/"; gl[ng] = length($0) + 1; next }
  FILENAME == dir "/out/plist" { pe++; if ($1 == "f") { pf++; pb += $2 }; next }
  { r = substr($0, 3); i = index(r, "|"); p = substr(r, i + 1); x = (p in ok) || (p in gone)
    if (!x && ng > 64) { q = p; while (q != "." && q != "") { if (q in gone) { x = 1; break }; k = length(q); while (k > 0 && substr(q, k, 1) != "/") k--; q = k > 1 ? substr(q, 1, k - 1) : "." } }
    else if (!x) for (k = 1; k <= ng; k++) if (substr(p, 1, gl[k]) == g[k]) { x = 1; break }
    # A subset counts what it drops (from the whole); the whole list counts what it keeps.
    if (x == part) { e++; if ($1 == "f") { f++; b += substr(r, 1, i - 1) } } }
  END { if (part) { split(base, t, " "); e = t[1] - e; f = t[2] - f; b = t[3] - b }
    printf "%d %d %.0f", e + pe, f + pf, b + pb }' ${W}/out/changed ${W}/dgone ${W}/out/removed ${W}/out/plist ${W}/sidx.sub)
: T:tgt-totals
echo "$(cat ${W}/out/stats) $(wc -l < ${W}/out/removed) $(wc -l < ${W}/mend) $totals $bad"`;

/** Source, before the first round: about what a tar of the whole volume takes (a progress total; it may be in use). */
export const sourceMeasure = `${STRICT}; cd ${MOUNT}
{ find . ! -type s -exec stat -c '%F|-|%s' {} + 2>/dev/null || true; } | awk -F'|' '{ $1 = ($1 ~ /^regular/) ? "f" : "x" } ${TAR_SIZE}'`;

/** Either side, on request: every regular file's sha256, sorted by path; prints the list's own sha256. */
export const checksums = `${STRICT}; cd ${MOUNT}
find . -type f -exec sha256sum {} + | LC_ALL=C sort -k 2 > ${W}/sums
echo "$(wc -l < ${W}/sums) $(sha256sum < ${W}/sums | cut -d ' ' -f 1)"`;

/**
 * Either side, at the end of the preparation: writes the volume's filesystem's dirty pages out
 * (syncfs; a whole sync where busybox lacks -f). Left to the kernel, the gigabyte just copied is
 * written back ~30 s later, often inside the pause, and on ext4 (data=ordered) every file creation
 * and fsync then waits for it: the engine's own state writes when an exec ends (measured at 1 GiB:
 * 0.6 s of the pause), the target's extraction.
 */
export const flushVolume = `sync -f ${MOUNT} 2>/dev/null || sync`;

/** Target, before the first round: whether the volume holds anything. */
export const isEmpty = `cd ${MOUNT} && [ -z "$(find . -mindepth 1 | head -n 1)" ] && echo empty || echo not-empty`;

/** The helpers' long-running command: idle until removed (a TERM ends it at once). */
export const IDLE = ['sh', '-c', `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`];

/** Where the target takes the source's W/out (archive PUT of that directory into W). */
export const OUT_DIR = `${W}/out`;
/** What the target sends back to the source after the preparation (its differing paths, copies of hot files). */
export const BACK_DIR = `${W}/back`;
export const WORK_DIR = W;
