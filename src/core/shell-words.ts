import { parse } from 'shell-quote';

/**
 * Splits a command line into words as compose and `docker run` do (quotes, backslashes), with
 * shell-quote. Nothing is expanded: `$VAR` stays as written, for the container's own shell.
 * Shell operators (`&&`, `|`, `;`, `>`) and comments are refused rather than passed on as words
 * that would mean something else than they seem: a caller that wants them writes `sh -c '…'`.
 */
export function splitWords(line: string): { words: string[] } | { error: string } {
  const words: string[] = [];
  for (const entry of parse(line, (key) => (key ? '${' + key + '}' : '$'))) {
    if (typeof entry === 'string') words.push(entry);
    else if ('op' in entry && entry.op === 'glob') words.push(entry.pattern);
    else if ('op' in entry) return { error: `"${entry.op}" is a shell operator; write the command as a list, or as sh -c '...'.` };
    else return { error: 'a "#" comment is not a word; quote it.' };
  }
  return { words };
}
