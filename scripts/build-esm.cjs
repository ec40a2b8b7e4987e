// Writes the ESM entry point next to the CommonJS build: it re-exports every named export of the CommonJS
// module, so `import { ssoSession } from 'express-sso-kit'` works in Node's ESM without a second compilation.
const fs = require('node:fs');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist');
const names = Object.keys(require(path.join(dist, 'cjs', 'index.js'))).filter((name) => name !== 'default' && name !== '__esModule');
const lines = [
  "import kit from '../cjs/index.js';",
  ...names.map((name) => `export const ${name} = kit.${name};`),
  'export default kit;',
  '',
];
fs.mkdirSync(path.join(dist, 'esm'), { recursive: true });
fs.writeFileSync(path.join(dist, 'esm', 'index.mjs'), lines.join('\n'));
fs.writeFileSync(
  path.join(dist, 'esm', 'index.d.mts'),
  "export * from '../cjs/index.js';\nimport kit from '../cjs/index.js';\nexport default kit;\n",
);
console.log(`dist/esm/index.mjs: ${names.length} named exports`);
