import fs from 'node:fs';
import path from 'node:path';

export const README = path.resolve(import.meta.dirname, '../../README.md');

/** The ```sh blocks between `<!-- walkthrough:start -->` and `<!-- walkthrough:end -->`. */
export function walkthroughBlocks(readme: string = fs.readFileSync(README, 'utf8')): string[] {
  const start = readme.indexOf('<!-- walkthrough:start -->');
  const end = readme.indexOf('<!-- walkthrough:end -->');
  if (start === -1 || end <= start) throw new Error('README.md has no walkthrough markers');
  const blocks = [...readme.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error('the walkthrough has no sh blocks');
  return blocks;
}

/** The walkthrough as one script, as written. */
export function walkthroughScript(readme?: string): string {
  return walkthroughBlocks(readme).join('\n');
}
