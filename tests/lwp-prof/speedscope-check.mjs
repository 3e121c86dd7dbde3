// SPDX-License-Identifier: GPL-2.0-or-later
// Load profiles with speedscope's own importer, headless in node:
//   node speedscope-check.mjs RELEASE_DIR FILE...
// RELEASE_DIR is the npm package's dist/release.  Its bundle keeps the
// importers in one module object (importProfileGroupFromText, ...),
// loaded lazily by the app; this script exposes that object to node,
// runs the bundle in a bare context (the app's start, which needs a
// browser, fails and is ignored) and imports each FILE as the app would
// when it is dropped on the page.  For each file it prints one JSON line:
// the profiles' count and every frame's self weight, added over them.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

const [dir, ...files] = process.argv.slice(2);
const bundle = fs.readdirSync(dir).find(f => /^speedscope-.*\.js$/.test(f));
let src = fs.readFileSync(path.join(dir, bundle), 'utf8');
const esc = s => s.replace(/\$/g, '\\$');
const mod = /[\w$]+\(([\w$]+),\{importFromFileSystemDirectoryEntry:/.exec(src);
if (!mod) throw new Error('speedscope bundle: the importer module was not found');
const lazy = new RegExp(`var [\\w$]+=Promise\\.resolve\\(\\)\\.then\\(\\(\\)=>\\(([\\w$]+)\\(\\),${esc(mod[1])}\\)\\);`).exec(src);
if (!lazy) throw new Error('speedscope bundle: the importer\'s loader was not found');
src = src.replace(lazy[0], `${lazy[0]}globalThis.__importers=()=>(${lazy[1]}(),${mod[1]});`);

const stub = () => new Proxy(function () {}, {
  get: (t, k) => (k === Symbol.toPrimitive ? () => '' : stub()),
  apply: () => stub(),
  construct: () => stub(),
});
const ctx = { console, TextDecoder, TextEncoder, URL, setTimeout, clearTimeout, atob, btoa,
              performance, Uint8Array, ArrayBuffer, DataView };
Object.assign(ctx, { window: ctx, self: ctx, globalThis: ctx, document: stub(),
                     navigator: { userAgent: 'node' },
                     location: { href: 'file:///lwp-prof', hash: '', search: '' },
                     addEventListener: () => {}, requestAnimationFrame: () => 0 });
vm.createContext(ctx);
try {
  vm.runInContext(src, ctx);
} catch (e) {
  console.error(`speedscope's app did not start without a browser (expected): ${String(e).slice(0, 120)}`);
}
const importers = ctx.__importers();
for (const f of files) {
  const group = await importers.importProfileGroupFromText(path.basename(f), fs.readFileSync(f, 'utf8'));
  if (!group) throw new Error(`${f}: speedscope could not import it`);
  const self = {};
  for (const p of group.profiles) {
    p.forEachFrame(fr => { self[fr.name] = (self[fr.name] || 0) + fr.getSelfWeight(); });
  }
  console.log(JSON.stringify({ file: f, profiles: group.profiles.length, self }));
}
