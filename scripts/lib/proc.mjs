// What /proc says about a process, for the benchmarks (Linux only).
import fs from 'node:fs';

const CLK_TCK = 100; // USER_HZ: 100 on every Linux architecture Node runs on

/**
 * CPU time (user + system, ms) a process has used so far, from /proc; null elsewhere.
 * CPU per request is far less sensitive than requests/s to other work on a shared machine.
 */
export function cpuMs(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}
