// Regenerates the route and tool tables of docs/api.md and docs/mcp.md from the operation table
// (run after `npm run build`).
import fs from 'node:fs';
import { operations } from '../dist/core/operations/index.js';
import { generatedSections, replaceSection } from '../dist/docs.js';
import { tools } from '../dist/mcp/tools/index.js';

for (const { file, name, body } of generatedSections(operations, tools)) {
  const url = new URL(`../${file}`, import.meta.url);
  fs.writeFileSync(url, replaceSection(fs.readFileSync(url, 'utf8'), name, body));
  console.log(`${file}: ${name} table regenerated`);
}
