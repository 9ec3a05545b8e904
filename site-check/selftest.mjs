#!/usr/bin/env node
// Self-test for check.mjs: writes a small good page and several broken variants
// into a temp dir, runs the checker on them and asserts what it reports.
// Usage: node site-check/selftest.mjs   (exit 0 when every assertion holds)

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { countElements, pageTimeLimit, timeoutMessage } from './check.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHECK = path.join(HERE, 'check.mjs');

function page({
  lang = 'en', title = 'Self-test page', viewport = true, skip = true, mainTabindex = true,
  h1 = '<h1>Self-test page</h1>', head = '', body = '', style = '',
} = {}) {
  return `<!doctype html>
<html${lang ? ` lang="${lang}"` : ''}>
<head>
<meta charset="utf-8">
${viewport ? '<meta name="viewport" content="width=device-width, initial-scale=1">' : ''}
<title>${title}</title>
<style>
body { font-family: sans-serif; margin: 0; color: #1a1a1a; background: #fff; line-height: 1.5; }
.skip-link { position: absolute; left: -10000px; top: 0; background: #fff; color: #0b4fb3; padding: .5em; }
.skip-link:focus { left: 0; }
a { color: #0b4fb3; }
:focus-visible { outline: 3px solid #0b4fb3; outline-offset: 2px; }
header, main, footer { padding: 1em; }
.scroll { overflow-x: auto; }
td, th { border: 1px solid #555; padding: 4px; }
${style}
</style>
${head}
</head>
<body>
${skip ? '<a class="skip-link" href="#main">Skip to main content</a>' : ''}
<header><nav aria-label="Site"><a href="index.html">Home</a> <a href="data.csv">Data (CSV)</a></nav></header>
<main id="main"${mainTabindex ? ' tabindex="-1"' : ''}>
${h1}
<p>Readable text. <a href="#tbl">Jump to the table</a>.</p>
<h2 id="tbl">A wide table in its own scroll container</h2>
<div class="scroll" role="region" aria-label="Wide table" tabindex="0">
<table style="width:1500px"><caption>Numbers</caption>
<tr><th scope="col">A</th><th scope="col">B</th></tr><tr><td>1</td><td>2</td></tr></table>
</div>
${body}
<p><button type="button">A button</button></p>
</main>
<footer><p>Footer <a href="index.html">back to top</a></p></footer>
</body>
</html>
`;
}

function sortable(attrs, open = '', close = '') {
  const head = ['Tier', 'Model', 'Estimate'].map((h) => `<th scope="col">${open}${h}${close}</th>`).join('');
  const rows = [['1', 'B', '9'], ['1', 'A', '10'], ['', 'C', '']]
    .map(([t, m, e]) => `<tr><td>${t}</td><th scope="row">${m}</th><td>${e}</td></tr>`).join('');
  return `<div class="scroll" role="region" aria-label="Scores" tabindex="0"><table ${attrs}><caption>Scores</caption>` +
    `<thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

// name -> [html, expectation]; expectation.fail: category that must fail, msg: substring of a failure
const CASES = {
  'index.html': [page(), { pass: true }],
  'sub/nested.html': [page({ title: 'Nested page' }), { pass: true }],
  'no-skip.html': [page({ skip: false }), { fail: 'keyboard', msg: 'first Tab stop is not a skip link' }],
  'skip-main-not-focusable.html': [page({ mainTabindex: false }),
    { fail: 'keyboard', msg: 'add tabindex="-1" to <main>' }],
  'trap.html': [page({
    body: `<p><label for="t">Trap</label> <input id="t" type="text"></p>
<script>document.getElementById('t').addEventListener('keydown', (e) => { if (e.key === 'Tab') e.preventDefault(); });</script>`,
  }), { fail: 'keyboard', msg: 'keyboard trap' }],
  'no-focus-style.html': [page({ style: '*:focus, *:focus-visible { outline: none !important; }' }),
    { fail: 'keyboard', msg: 'without a focus indicator' }],
  'hidden-focus.html': [page({
    style: '.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }',
    body: '<p><a class="sr-only" href="#tbl">Hidden link that stays hidden on focus</a></p>',
  }), { fail: 'keyboard', msg: 'not visible when focused' }],
  'wide.html': [page({ body: '<div class="too-wide" style="width:2000px">A 2000px wide box</div>' }),
    { fail: 'reflow', msg: 'class="too-wide"> 2000px' }],
  'external.html': [page({ head: '<script src="https://cdn.example.com/lib.js"></script>' }),
    { fail: 'offline', msg: 'https://cdn.example.com/lib.js' }],
  'contrast.html': [page({ body: '<p style="color:#b0b0b0">Low-contrast grey text.</p>' }),
    { fail: 'axe', msg: 'color-contrast' }],
  'facts.html': [page({ lang: '', title: 'Notebook', viewport: false, h1: '<h1>One</h1><h1>Two</h1>' }),
    // axe reports the missing lang too (html-has-lang, serious)
    { fail: 'facts', msg: ['no lang attribute', 'is just "Notebook"', '2 <h1> elements', 'no <meta name="viewport">'], also: 'axe' }],
  // the leaderboard's own sort script (copied beside the pages below), and buttons that sort nothing
  'sort.html': [page({ head: '<script src="table_sort.js" defer></script>', body: sortable('class="sortable"') }),
    { pass: true }],
  'sort-broken.html': [page({ body: sortable('', '<button type="button">', '</button>') }),
    { fail: 'sort', msg: 'without aria-sort ascending/descending' }],
};

const prefixOf = { keyboard: 'keyboard:', reflow: 'reflow:', offline: 'offline:', axe: 'axe ', facts: 'page facts:', sort: 'sort:' };

function run(args, env = {}) {
  const r = spawnSync(process.execPath, [CHECK, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout + r.stderr };
}

let failures = 0;
function expect(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

// 0. the time-limit rule (pure functions; no browser)
expect(countElements('<!doctype html><html><body><p>a < b</p><br/></body></html>') === 4,
  'countElements counts start tags, not the doctype, end tags or a lone "<"');
expect(pageTimeLimit({ elements: 600, baseSec: 60, per1000Sec: 5, concurrency: 2, cpus: 2 }) === 63,
  'limit = 60 s + 5 s per 1000 elements (600 elements: 63 s)');
expect(pageTimeLimit({ elements: 29000, baseSec: 60, per1000Sec: 5, concurrency: 2, cpus: 2 }) === 205,
  'a 29000-element page gets 205 s');
expect(pageTimeLimit({ elements: 29000, baseSec: 120, per1000Sec: 5, concurrency: 2, cpus: 2 }) === 265,
  '--timeout raises the base only');
expect(pageTimeLimit({ elements: 29000, baseSec: 60, per1000Sec: 5, concurrency: 4, cpus: 2 }) === 350,
  'more pages in flight than cores: the size term grows by concurrency/CPUs (4/2)');
expect(pageTimeLimit({ elements: 29000, baseSec: 60, per1000Sec: 5, concurrency: 2, cpus: 16 }) === 205,
  'fewer pages in flight than cores: no discount');
expect(pageTimeLimit({ elements: 29000, baseSec: 45, per1000Sec: 0, concurrency: 8, cpus: 1 }) === 45,
  '--timeout-per-1000 0: every page gets exactly --timeout');
expect(pageTimeLimit({ elements: 1001, baseSec: 60, per1000Sec: 5, concurrency: 2, cpus: 2 }) === 66,
  'the limit is rounded up to whole seconds');
const tmsg = timeoutMessage({ limit: { sec: 205, baseSec: 60, per1000Sec: 5, elements: 29000, htmlBytes: 600 * 1024, share: 1 },
  stage: 'axe 320', loadavg: 6.2, cpus: 2 });
for (const m of ['time-out, not an accessibility finding', 'limit of 205 s', '60 s + 5 s x 29000 elements / 1000',
  '"axe 320"', '29000 elements, 600 KiB of HTML', 'load average 6.2 on 2 CPUs', '--timeout 265']) {
  expect(tmsg.includes(m), `time-out message says ${m}`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'site-check-selftest-'));
try {
  const bad = path.join(tmp, 'site');
  const good = path.join(tmp, 'good');
  for (const [name, [html]] of Object.entries(CASES)) {
    fs.mkdirSync(path.dirname(path.join(bad, name)), { recursive: true });
    fs.writeFileSync(path.join(bad, name), html);
  }
  fs.writeFileSync(path.join(bad, 'data.csv'), 'a,b\n1,2\n');
  fs.copyFileSync(path.join(HERE, '..', 'vqalib', 'compendium', 'table_sort.js'), path.join(bad, 'table_sort.js'));
  fs.mkdirSync(good);
  fs.writeFileSync(path.join(good, 'index.html'), CASES['index.html'][0]);
  fs.writeFileSync(path.join(good, 'data.csv'), 'a,b\n1,2\n');

  // 1. the good site passes, with screenshots
  const outGood = path.join(tmp, 'out-good');
  const g = run(['--site', good, '--out', outGood, '--screenshot', 'index.html']);
  expect(g.code === 0, `good site exits 0 (got ${g.code})`);
  if (g.code !== 0) console.log(g.out);
  for (const f of ['report.json', 'report.md', 'index-1280.png', 'index-320.png']) {
    expect(fs.existsSync(path.join(outGood, f)), `good site wrote ${f}`);
  }

  // 2. the mixed site fails, each variant for its own reason only
  const outBad = path.join(tmp, 'out-bad');
  const b = run(['--site', bad, '--out', outBad]);
  expect(b.code === 1, `site with broken pages exits 1 (got ${b.code})`);
  const report = JSON.parse(fs.readFileSync(path.join(outBad, 'report.json'), 'utf8'));
  expect(report.pages.length === Object.keys(CASES).length,
    `all ${Object.keys(CASES).length} pages audited, nested folders included (got ${report.pages.length})`);
  for (const [name, [, exp]] of Object.entries(CASES)) {
    const p = report.pages.find((x) => x.page === name);
    if (!p) { expect(false, `${name} is in the report`); continue; }
    if (exp.pass) {
      expect(p.ok, `${name} passes` + (p.ok ? '' : `: ${p.failures.join(' / ')}`));
      continue;
    }
    expect(!p.ok, `${name} fails`);
    const msgs = Array.isArray(exp.msg) ? exp.msg : [exp.msg];
    for (const m of msgs) {
      expect(p.failures.some((f) => f.startsWith(prefixOf[exp.fail]) && f.includes(m)),
        `${name}: ${exp.fail} failure mentions "${m}"`);
    }
    const other = p.failures.filter((f) => !f.startsWith(prefixOf[exp.fail]) && !(exp.also && f.startsWith(prefixOf[exp.also])));
    expect(other.length === 0, `${name}: no other failures` + (other.length ? ` (got: ${other.join(' / ')})` : ''));
  }
  const md = fs.readFileSync(path.join(outBad, 'report.md'), 'utf8');
  expect(md.includes('| wide.html | FAIL |'), 'report.md has a summary line per page');

  // the report records each page's limit from the rule
  const gi = JSON.parse(fs.readFileSync(path.join(outGood, 'report.json'), 'utf8'));
  const gl = gi.pages[0].timeLimit;
  expect(gl && gl.elements === countElements(CASES['index.html'][0]) && gl.sec === pageTimeLimit({
    elements: gl.elements, baseSec: 60, per1000Sec: 5, concurrency: gi.options.concurrency, cpus: gi.options.cpus,
  }) && gi.pages[0].timedOut === false, `report.json records the page's time limit (${JSON.stringify(gl)})`);

  // 2b. the sort script's order: numbers as numbers, blanks last both ways, ties in rank order, toggling
  const puppeteer = (await import('puppeteer-core')).default;
  const browser = await puppeteer.launch({ executablePath: process.env.CHROME_PATH || '/usr/bin/chromium', headless: true,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [] });
  try {
    const tab = await browser.newPage();
    await tab.goto('file://' + path.join(bad, 'sort.html'), { waitUntil: 'load' });
    const press = (col) => tab.evaluate((c) => {
      document.querySelectorAll('table.sortable thead button')[c].click();
      return [[...document.querySelectorAll('table.sortable tbody th')].map((th) => th.textContent).join(''),
        document.querySelector('[aria-live]').textContent];
    }, col);
    const got = [await press(2), await press(2), await press(0), await press(0), await press(1), await press(1)];
    expect(JSON.stringify(got) === JSON.stringify([['BAC', 'Sorted by Estimate, ascending'],
      ['ABC', 'Sorted by Estimate, descending'], ['BAC', 'Sorted by Tier, ascending'], ['BAC', 'Sorted by Tier, descending'],
      ['ABC', 'Sorted by Model, ascending'], ['CBA', 'Sorted by Model, descending']]),
    `table_sort.js: 9 before 10, blanks last, ties in rank order, each press toggles (got ${JSON.stringify(got)})`);
  } finally {
    await browser.close();
  }

  // 3. a page that never finishes loading fails as a time-out (not a finding); the run goes on
  const hang = path.join(tmp, 'hang');
  fs.mkdirSync(hang);
  fs.writeFileSync(path.join(hang, 'index.html'), CASES['index.html'][0]);
  fs.writeFileSync(path.join(hang, 'data.csv'), 'a,b\n');
  fs.writeFileSync(path.join(hang, 'busy.html'), page({ body: '<script>for (;;) {}</script>' }));
  const t0 = Date.now();
  const h = run(['--site', hang, '--out', path.join(tmp, 'out-hang'), '--timeout', '5']);
  const hr = JSON.parse(fs.readFileSync(path.join(tmp, 'out-hang', 'report.json'), 'utf8'));
  const busy = hr.pages.find((x) => x.page === 'busy.html');
  const lim = busy && busy.timeLimit ? busy.timeLimit.sec : NaN;
  expect(h.code === 1 && busy && !busy.ok && busy.timedOut && lim >= 5 && lim <= 7 &&
    (busy.error || '').startsWith(`timed out after ${lim} s`),
    `a hanging page fails as a time-out after its limit, --timeout 5 + its size term (exit ${h.code}, error: ${busy && busy.error})`);
  expect(busy && busy.failures.length === 1 && busy.failures[0].startsWith('time-out, not an accessibility finding') &&
    busy.failures[0].includes(`limit of ${lim} s`) && busy.failures[0].includes(`${busy.timeLimit.elements} elements`) &&
    busy.failures[0].includes('--timeout'),
    `the time-out says it is no finding, with the limit, the page's size and --timeout (${busy && busy.failures[0]})`);
  expect(hr.summary.timedOut === 1 && /busy\.html\s+TIME-OUT/.test(h.out) &&
    h.out.includes('timed out: that is no accessibility finding'),
    'the summary table and the closing lines name the time-out');
  const hmd = fs.readFileSync(path.join(tmp, 'out-hang', 'report.md'), 'utf8');
  expect(hmd.includes('| busy.html | TIME-OUT |') && hmd.includes('1 of them time-outs, not accessibility findings'),
    'report.md marks the time-out');
  const f0 = run(['--site', hang, '--out', path.join(tmp, 'out-fixed'), '--timeout', '3', '--timeout-per-1000', '0',
    '--page', 'busy.html', '--quiet']);
  const fr = JSON.parse(fs.readFileSync(path.join(tmp, 'out-fixed', 'report.json'), 'utf8'));
  expect(f0.code === 1 && fr.pages[0].timeLimit.sec === 3 && /^timed out after 3 s/.test(fr.pages[0].error || ''),
    `--timeout-per-1000 0 gives exactly --timeout (${fr.pages[0].error})`);
  expect(hr.pages.find((x) => x.page === 'index.html').ok, 'the other page of that site still passes');
  expect(Date.now() - t0 < 40000, `the hanging page did not stall the run (${Math.round((Date.now() - t0) / 1000)} s)`);

  // 4. setup errors exit 2 with a helpful message
  const c = run(['--site', good, '--out', path.join(tmp, 'out-nochrome')], { CHROME_PATH: path.join(tmp, 'no-such-chromium') });
  expect(c.code === 2 && c.out.includes('apt-get install chromium'), `missing chromium exits 2 with install hint (got ${c.code})`);
  const s = run(['--site', path.join(tmp, 'does-not-exist'), '--out', path.join(tmp, 'out-nosite')]);
  expect(s.code === 2, `missing --site exits 2 (got ${s.code})`);
  const bt = run(['--site', good, '--out', path.join(tmp, 'out-badtimeout'), '--timeout-per-1000=-1']);
  expect(bt.code === 2 && bt.out.includes('--timeout-per-1000 must be'), `a negative --timeout-per-1000 exits 2 (got ${bt.code})`);
  // a copy of check.mjs without node_modules next to it
  const bare = path.join(tmp, 'bare');
  fs.mkdirSync(bare);
  fs.copyFileSync(CHECK, path.join(bare, 'check.mjs'));
  const nm = spawnSync(process.execPath, [path.join(bare, 'check.mjs'), '--site', good, '--out', path.join(tmp, 'out-bare')],
    { encoding: 'utf8', cwd: bare });
  expect(nm.status === 2 && (nm.stdout + nm.stderr).includes('npm ci --prefix site-check'),
    `missing node_modules exits 2 with npm ci hint (got ${nm.status})`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

console.log(failures ? `\n${failures} self-test assertion(s) FAILED` : '\nself-test passed');
process.exit(failures ? 1 : 0);
