// Regenerates the README's route and tool tables from the operation table (run after `npm run build`).
import fs from 'node:fs';
import { operations } from '../dist/core/operations/index.js';
import { renderRouteTable, renderToolTable, replaceSection } from '../dist/tools/docs.js';
import { tools } from '../dist/tools/index.js';

const file = new URL('../README.md', import.meta.url);
let doc = fs.readFileSync(file, 'utf8');
doc = replaceSection(doc, 'routes', renderRouteTable(operations));
doc = replaceSection(doc, 'tools', renderToolTable(tools));
fs.writeFileSync(file, doc);
console.log('README.md tables regenerated');
