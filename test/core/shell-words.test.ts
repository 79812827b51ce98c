/**
 * Splitting command lines into words (compose's string command/entrypoint, docker run options):
 * whatever a shell quotes, splitting gives back the words; nothing is expanded; operators are
 * refused rather than turned into words. Durations as compose writes them.
 */
import fc from 'fast-check';
import { quote } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { durationSeconds } from '../../src/core/compose.js';
import { splitWords } from '../../src/core/shell-words.js';

describe('splitWords', () => {
  it('gives back any list of words a shell would quote', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom(...'ab $"\'\\|&;#*?~{}()<>=-/\t'.split('')), minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }), (words) => {
        expect(splitWords(quote(words))).toEqual({ words });
      }),
      { numRuns: 300 },
    );
  });

  it('splits as compose does and expands nothing', () => {
    expect(splitWords('sleep 36000')).toEqual({ words: ['sleep', '36000'] });
    expect(splitWords(`nginx -g "daemon off;"`)).toEqual({ words: ['nginx', '-g', 'daemon off;'] });
    expect(splitWords(`sh -c 'echo $HOME && exit 0'`)).toEqual({ words: ['sh', '-c', 'echo $HOME && exit 0'] });
    expect(splitWords('echo $HOME ${X:-y} $ *.js')).toEqual({ words: ['echo', '${HOME}', '${X:-y}', '$', '*.js'] });
  });

  it('refuses shell operators and comments', () => {
    for (const line of ['a && b', 'a | b', 'a; b', 'a > /etc/x', 'a # note']) expect(splitWords(line)).toHaveProperty('error');
  });
});

describe('durationSeconds', () => {
  it('reads Go durations and nothing else', () => {
    expect(durationSeconds('1m30s')).toBe(90);
    expect(durationSeconds('500ms')).toBe(0.5);
    expect(durationSeconds('1h')).toBe(3600);
    for (const v of ['10', 10, '1 m', 's', '-1s', '']) expect(durationSeconds(v)).toBeNull();
  });
});
