#!/usr/bin/env node
// Site checker for the vqalib reviewer website (build/html).
//
// Serves the static site on a local HTTP port, opens every *.html page in
// headless Chromium (puppeteer-core + system chromium) and audits it:
//   - axe-core WCAG 2.0/2.1 A+AA rules at 1280x900 and 320x800
//   - reflow at 320 px (WCAG 1.4.10: no page-level horizontal scrolling)
//   - keyboard walk (skip link first, Enter moves focus to <main>, visible
//     focus indicator on every stop, no keyboard trap)
//   - page facts (lang, title, one h1, main, meta viewport)
//   - offline: no request may leave the local server
//   - a summary table (#summary): every row and cell on the page, no inner scroll box
//     clipping it, at 1280x720 and 320 px; its chart's text (.summary-figure) >= 12 px
//   - print (paper views, the report): each number (.pv-values) at least as large as its label (.pv-state)
//   - sort buttons (<th><button>, the leaderboard): Enter on one reorders the rows, sets aria-sort on that
//     header only and says so in a live region; Space sorts the other way
// Each page has a time limit that grows with its size (pageTimeLimit); a page that
// goes over it fails as a time-out, which the report keeps apart from findings.
// Writes <out>/report.json and <out>/report.md, optional screenshots.
// Exit codes: 0 all pages pass, 1 some check failed, 2 setup error.

import http from 'node:http';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa', 'best-practice'];
const FAIL_IMPACTS = new Set(['serious', 'critical']);
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 320, height: 800 };
const SUMMARY_VIEW = { width: 1280, height: 720 }; // the reviewer's laptop: every summary row must show
const MIN_CHART_PX = 12;
const WALK_CAP = 400;
const TIMEOUT_BASE_DEFAULT = 60; // s, --timeout
const TIMEOUT_PER_1000_DEFAULT = 5; // s per 1000 elements, --timeout-per-1000

const USAGE = `Usage: node site-check/check.mjs --site build/html --out build/site-check
         [--screenshot index.html ...] [--timeout 60] [--timeout-per-1000 5] [--concurrency 2]
         [--page PATH ...]

  --site DIR          static site folder to audit (default build/html)
  --out DIR           where report.json, report.md and screenshots go (default build/site-check)
  --screenshot PAGE   page (relative to --site) to capture full-page at 1280 and 320 px; repeatable
  --timeout SEC       base of each page's time limit (default 60); see "Time limit" below
  --timeout-per-1000 SEC
                      seconds added per 1000 elements of the page (default 5); 0 makes
                      every page's limit exactly --timeout
  --concurrency N     pages audited in parallel (default 2)
  --page PAGE         audit only this page (relative to --site); repeatable; default: every *.html
  --quiet             print only the summary table

Time limit: each page gets
    limit = ceil(timeout + timeout-per-1000 * elements / 1000 * max(1, concurrency / CPUs))
  seconds for its whole audit (load, keyboard walk, axe at both widths, screenshots), where
  elements is the number of start tags in the page's HTML file, counted before the browser
  starts, and CPUs the cores Node may use. With the defaults on 2 CPUs a 600-element page
  gets 63 s and a 29000-element page 205 s. A page over its limit fails as a time-out, not
  an accessibility finding; the report gives the limit and the page's size. On a busy
  machine raise --timeout.

Env: CHROME_PATH (default /usr/bin/chromium).
Exit codes: 0 all pages pass, 1 a check failed (a time-out included), 2 setup error.`;

class SetupError extends Error {}

// ---------------------------------------------------------------- arguments
function parseCli(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        site: { type: 'string', default: 'build/html' },
        out: { type: 'string', default: 'build/site-check' },
        screenshot: { type: 'string', multiple: true, default: [] },
        page: { type: 'string', multiple: true, default: [] },
        timeout: { type: 'string', default: String(TIMEOUT_BASE_DEFAULT) },
        'timeout-per-1000': { type: 'string', default: String(TIMEOUT_PER_1000_DEFAULT) },
        concurrency: { type: 'string', default: '2' },
        quiet: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      allowPositionals: false,
    });
  } catch (e) {
    throw new SetupError(`${e.message}\n\n${USAGE}`);
  }
  const v = parsed.values;
  if (v.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const timeout = Number(v.timeout);
  const per1000 = Number(v['timeout-per-1000']);
  const concurrency = Number(v.concurrency);
  if (!(timeout > 0 && Number.isFinite(timeout))) {
    throw new SetupError(`--timeout must be a positive number of seconds, got ${v.timeout}`);
  }
  if (!(per1000 >= 0 && Number.isFinite(per1000))) {
    throw new SetupError(`--timeout-per-1000 must be a number of seconds >= 0, got ${v['timeout-per-1000']}`);
  }
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 8)) {
    throw new SetupError(`--concurrency must be an integer 1..8, got ${v.concurrency}`);
  }
  const norm = (p) => p.replace(/\\/g, '/').replace(/^\.?\/+/, '');
  return {
    site: path.resolve(v.site),
    out: path.resolve(v.out),
    screenshots: v.screenshot.map(norm),
    only: v.page.map(norm),
    timeoutSec: timeout,
    per1000Sec: per1000,
    concurrency,
    quiet: v.quiet,
  };
}

// ---------------------------------------------------------------- time limits
// A page's audit time grows with its element count (axe and the keyboard walk visit every element),
// so each page gets a limit of its own; see "Time limit" in USAGE.

/** The elements of a page: its start tags (`<` then a letter) in the HTML source. */
export function countElements(html) {
  const m = String(html).match(/<[a-zA-Z]/g);
  return m ? m.length : 0;
}

/** The cores this process may use. */
export function cpuCount() {
  return Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

/**
 * The time limit of one page's audit, in whole seconds:
 * ceil(baseSec + per1000Sec * elements / 1000 * max(1, concurrency / cpus)).
 * Pages audited side by side share the cores, so with more pages in flight than cores each
 * one's size term grows by that ratio; the base (loading, fixed costs) does not.
 */
export function pageTimeLimit({
  elements, baseSec = TIMEOUT_BASE_DEFAULT, per1000Sec = TIMEOUT_PER_1000_DEFAULT, concurrency = 2, cpus = cpuCount(),
}) {
  const share = Math.max(1, concurrency / Math.max(1, cpus));
  return Math.ceil(baseSec + per1000Sec * (elements / 1000) * share - 1e-9);
}

/** The failure text of a page that went over its limit: a time-out, with the limit, the page's size and a way out. */
export function timeoutMessage({ limit, stage, loadavg = os.loadavg()[0], cpus = cpuCount() }) {
  const { sec, baseSec, per1000Sec, elements, htmlBytes, share } = limit;
  const rule = per1000Sec > 0
    ? `${baseSec} s + ${per1000Sec} s x ${elements} elements / 1000` + (share > 1 ? ` x ${share} (concurrency/CPUs)` : '')
    : `--timeout ${baseSec} s, no size term`;
  const more = Math.ceil(baseSec + sec); // doubles this page's limit
  return `time-out, not an accessibility finding: the audit did not finish within this page's limit of ${sec} s ` +
    `(${rule}); it was at "${stage}". Page size: ${elements} elements, ${Math.round(htmlBytes / 1024)} KiB of HTML; ` +
    `load average ${loadavg.toFixed(1)} on ${cpus} CPUs. On a slow or busy machine rerun with a larger base, ` +
    `e.g. --timeout ${more}, which doubles this page's limit (vqalib site check --timeout ${more}; ` +
    `make check-site SITE_TIMEOUT=${more}).`;
}

// ---------------------------------------------------------------- dependencies
async function loadDeps() {
  const hint = 'Node dependencies are missing: run `npm ci --prefix site-check` (from the repository root).';
  let puppeteer, axePath, versions = {};
  try {
    puppeteer = (await import('puppeteer-core')).default;
  } catch (e) {
    throw new SetupError(`${hint}\n(import puppeteer-core failed: ${e.code || e.message})`);
  }
  try {
    axePath = require.resolve('axe-core/axe.min.js');
  } catch (e) {
    throw new SetupError(`${hint}\n(axe-core/axe.min.js not found)`);
  }
  for (const name of ['puppeteer-core', 'axe-core']) {
    try {
      const pj = JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', name, 'package.json'), 'utf8'));
      versions[name] = pj.version;
    } catch {
      versions[name] = 'unknown';
    }
  }
  const axeSource = await fsp.readFile(axePath, 'utf8');
  return { puppeteer, axeSource, versions };
}

function findChrome() {
  const p = process.env.CHROME_PATH || '/usr/bin/chromium';
  try {
    fs.accessSync(p, fs.constants.X_OK);
    if (!fs.statSync(p).isFile()) throw new Error('not a file');
  } catch {
    throw new SetupError(
      `Chromium not found (or not executable) at ${p}.\n` +
      'Install it with `apt-get install chromium`, or set CHROME_PATH to a Chrome/Chromium binary.');
  }
  return p;
}

// ---------------------------------------------------------------- static server
const CONTENT_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.pdf': 'application/pdf',
  '.csv': 'text/csv; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.xml': 'application/xml',
  '.zip': 'application/zip',
};

function startServer(root) {
  const server = http.createServer(async (req, res) => {
    const send = (code, msg) => {
      res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : msg);
    };
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed');
      let rel;
      try {
        rel = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
      } catch {
        return send(400, 'bad request');
      }
      let file = path.resolve(root, '.' + rel);
      if (file !== root && !file.startsWith(root + path.sep)) return send(404, 'not found');
      let st = await fsp.stat(file).catch(() => null);
      if (st && st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = await fsp.stat(file).catch(() => null);
      }
      if (!st || !st.isFile()) return send(404, 'not found');
      const type = CONTENT_TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream';
      res.writeHead(200, { 'Content-Type': type, 'Content-Length': st.size, 'Cache-Control': 'no-store' });
      if (req.method === 'HEAD') return res.end();
      fs.createReadStream(file).on('error', () => res.destroy()).pipe(res);
    } catch (e) {
      send(500, String(e));
    }
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

async function discoverPages(root) {
  const out = [];
  async function walk(dir) {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name === 'node_modules') continue;
        await walk(full);
      } else if (e.isFile() && e.name.toLowerCase().endsWith('.html')) {
        out.push(path.relative(root, full).split(path.sep).join('/'));
      }
    }
  }
  await walk(root);
  return out.sort((a, b) => {
    // index.html first, then alphabetical
    const ai = a === 'index.html' ? 0 : 1, bi = b === 'index.html' ? 0 : 1;
    return ai - bi || a.localeCompare(b);
  });
}

// ---------------------------------------------------------------- in-page helpers
// These functions are serialised and run inside the page.

function pageFacts() {
  const main = document.querySelector('main') || document.querySelector('[role="main"]');
  const vp = document.querySelector('meta[name="viewport" i]');
  return {
    lang: document.documentElement.getAttribute('lang'),
    title: document.title,
    h1Count: document.querySelectorAll('h1').length,
    mainCount: document.querySelectorAll('main, [role="main"]').length,
    mainId: main ? main.id || null : null,
    mainTabindex: main ? main.getAttribute('tabindex') : null,
    viewport: vp ? vp.getAttribute('content') : null,
    declaresIcon: !!document.querySelector('link[rel~="icon" i]'),
    hasSummary: !!document.querySelector('table#summary'),
    hasPaperCells: !!document.querySelector('.pv-values'),
    domElements: document.getElementsByTagName('*').length,
  };
}

/**
 * Every row of table#summary on the page: each cell drawn, inside the viewport's width and not clipped by a
 * scrolling or hidden-overflow ancestor (the page itself may scroll down); text of .summary-figure >= minPx.
 */
export function summaryCheck(minPx) {
  const problems = [];
  const width = document.documentElement.clientWidth;
  const table = document.querySelector('table#summary');
  const rows = [...table.querySelectorAll('tbody tr, tfoot tr')];
  const name = (tr) => (tr.querySelector('th') || tr).textContent.trim().slice(0, 60);
  const clippers = [];
  for (let el = table.parentElement; el && el !== document.body && el !== document.documentElement; el = el.parentElement) {
    const cs = getComputedStyle(el);
    if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') clippers.push(el);
  }
  let visible = 0;
  for (const tr of rows) {
    const bad = [];
    for (const cell of tr.querySelectorAll('th, td')) {
      const r = cell.getBoundingClientRect();
      if (getComputedStyle(cell).display === 'none') continue;
      const label = cell.getAttribute('data-label') || cell.tagName.toLowerCase();
      if (r.width < 1 || r.height < 1) { bad.push(`${label} not drawn`); continue; }
      if (r.left < -0.5 || r.right > width + 0.5) bad.push(`${label} outside the ${width}px viewport (${Math.round(r.left)}..${Math.round(r.right)})`);
      for (const c of clippers) {
        const b = c.getBoundingClientRect();
        if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5) {
          bad.push(`${label} clipped by <${c.tagName.toLowerCase()} class="${c.className}"> (an inner scroll box)`);
          break;
        }
      }
    }
    if (bad.length) problems.push(`row "${name(tr)}": ${bad.slice(0, 3).join('; ')}`);
    else visible++;
  }
  const small = [];
  for (const el of document.querySelectorAll('.summary-figure *')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.closest('title, desc') || !el.getClientRects().length) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement && el.getScreenCTM) {
      const m = el.getScreenCTM();
      if (m) px *= Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    }
    if (px < minPx - 0.01) small.push(`"${el.textContent.trim().slice(0, 40)}" ${px.toFixed(1)}px`);
  }
  if (small.length) problems.push(`summary chart text under ${minPx}px: ${small.slice(0, 3).join('; ')}` + (small.length > 3 ? ` and ${small.length - 3} more` : ''));
  return { rows: rows.length, visible, width, problems };
}

/** In print: each paper-view cell's number (.pv-values) at least as large as its state label (.pv-state). */
export function printSizesCheck() {
  const bad = [];
  let cells = 0;
  for (const td of document.querySelectorAll('td.pv')) {
    const v = td.querySelector('.pv-values'), st = td.querySelector('.pv-state');
    if (!v || !st) continue;
    cells++;
    const a = parseFloat(getComputedStyle(v).fontSize), b = parseFloat(getComputedStyle(st).fontSize);
    if (a + 0.01 < b) bad.push(`${td.id || 'a cell'}: number ${a.toFixed(1)}px < label ${b.toFixed(1)}px`);
  }
  return { cells, bad };
}

function countFocusables() {
  const sel = 'a[href], area[href], button, input:not([type="hidden"]), select, textarea, iframe, summary, ' +
    '[tabindex], [contenteditable=""], [contenteditable="true"], audio[controls], video[controls]';
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    return getComputedStyle(el).visibility !== 'hidden';
  };
  let n = 0;
  for (const el of document.querySelectorAll(sel)) {
    if (el.disabled || el.tabIndex < 0 || el.closest('[inert]')) continue;
    if (visible(el)) n++;
  }
  // Chromium makes scroll containers without focusable children keyboard-focusable.
  let scrollers = 0;
  const all = document.body ? document.body.getElementsByTagName('*') : [];
  const limit = Math.min(all.length, 200000);
  for (let i = 0; i < limit; i++) {
    const el = all[i];
    if (el.scrollWidth <= el.clientWidth + 1 && el.scrollHeight <= el.clientHeight + 1) continue;
    if (el.clientWidth === 0 && el.clientHeight === 0) continue;
    const cs = getComputedStyle(el);
    if (/(auto|scroll)/.test(cs.overflowX + cs.overflowY) && !el.matches(sel) && !el.querySelector(sel)) scrollers++;
  }
  return { focusables: n, scrollers };
}

function describeActive() {
  const st = window.__siteCheck || (window.__siteCheck = { ids: new WeakMap(), n: 0 });
  let el = document.activeElement;
  // descend into shadow roots and same-origin iframes
  for (;;) {
    if (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
    if (el && el.tagName === 'IFRAME') {
      try {
        const inner = el.contentDocument && el.contentDocument.activeElement;
        if (inner && inner !== el.contentDocument.body) { el = inner; continue; }
      } catch { /* cross-origin */ }
    }
    break;
  }
  if (!el || el === document.body || el === document.documentElement) return { none: true };
  if (!st.ids.has(el)) st.ids.set(el, ++st.n);
  if (!st.first) st.first = el;
  const id = st.ids.get(el);

  const esc = (s) => (window.CSS && CSS.escape ? CSS.escape(s) : s);
  const short = (e) => {
    let s = e.tagName.toLowerCase();
    if (e.id) return s + '#' + esc(e.id);
    const cls = (typeof e.className === 'string' ? e.className : '').trim().split(/\s+/).filter(Boolean).slice(0, 2);
    if (cls.length) s += '.' + cls.map(esc).join('.');
    return s;
  };
  const selector = (e) => {
    const parts = [];
    let cur = e;
    while (cur && cur.nodeType === 1 && parts.length < 4) {
      let s = short(cur);
      if (cur.id) { parts.unshift(s); break; }
      const parent = cur.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === cur.tagName);
        if (same.length > 1) s += `:nth-of-type(${same.indexOf(cur) + 1})`;
      }
      parts.unshift(s);
      if (cur.tagName === 'BODY') break;
      cur = parent;
    }
    return parts.join(' > ');
  };

  // The visual box of the element: its own box united with its descendants' boxes
  // (an inline <a> around a block image has a one-line box of its own).
  const visualRect = () => {
    const rs = [el.getBoundingClientRect()];
    const kids = el.getElementsByTagName('*');
    for (let i = 0; i < kids.length && i < 300; i++) rs.push(kids[i].getBoundingClientRect());
    const nz = rs.filter((x) => x.width > 0 && x.height > 0);
    if (!nz.length) return rs[0];
    const l = Math.min(...nz.map((x) => x.left)), t = Math.min(...nz.map((x) => x.top));
    const rr = Math.max(...nz.map((x) => x.right)), b = Math.max(...nz.map((x) => x.bottom));
    return { left: l, top: t, right: rr, bottom: b, width: rr - l, height: b - t };
  };
  const vw = window.innerWidth, vh = window.innerHeight;
  const offscreen = (x) => x.right <= 0 || x.bottom <= 0 || x.left >= vw || x.top >= vh;
  try { el.scrollIntoView({ block: 'nearest', inline: 'nearest' }); } catch { /* ignore */ }
  let r = visualRect();
  if (offscreen(r)) {
    try { el.scrollIntoView({ block: 'center', inline: 'center' }); } catch { /* ignore */ }
    r = visualRect();
  }
  const cs = getComputedStyle(el);
  const problems = [];
  if (r.width < 1 || r.height < 1) problems.push(`zero-size box (${Math.round(r.width)}x${Math.round(r.height)})`);
  else if (r.width < 2 && r.height < 2) problems.push('1px box (visually hidden while focused)');
  if (cs.visibility === 'hidden') problems.push('visibility:hidden');
  if (parseFloat(cs.opacity) === 0) problems.push('opacity:0');
  if (offscreen(r)) {
    problems.push(`off-screen at (${Math.round(r.left)},${Math.round(r.top)}) after scrolling into view`);
  }
  const outlineOk = cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0;
  const shadowOk = cs.boxShadow && cs.boxShadow !== 'none';
  const text = (el.innerText || el.value || el.getAttribute('aria-label') || el.getAttribute('title') || '')
    .replace(/\s+/g, ' ').trim().slice(0, 60);
  const main = document.querySelector('main') || document.querySelector('[role="main"]');
  return {
    id,
    tag: el.tagName.toLowerCase(),
    selector: selector(el),
    text,
    href: el.tagName === 'A' ? el.getAttribute('href') : null,
    rect: { x: Math.round(r.left), y: Math.round(r.top), w: Math.round(r.width), h: Math.round(r.height) },
    visible: problems.length === 0,
    visibilityProblems: problems,
    indicator: outlineOk || shadowOk,
    outline: `${cs.outlineStyle} ${cs.outlineWidth}`,
    boxShadow: cs.boxShadow,
    inMain: !!(main && (main === el || main.contains(el))),
    isMain: main === el,
  };
}

function skipLinkInfo() {
  // Evaluated with the first focused element still focused.
  const el = document.activeElement;
  const main = document.querySelector('main') || document.querySelector('[role="main"]');
  if (!el || el.tagName !== 'A') return { isSkipLink: false, reason: 'first focused element is not an <a>' };
  const raw = el.getAttribute('href') || '';
  let sameDoc = false, hash = '';
  try {
    const u = new URL(el.href, location.href);
    sameDoc = u.origin === location.origin && u.pathname === location.pathname && u.search === location.search;
    hash = u.hash;
  } catch { /* ignore */ }
  const mainId = main && main.id;
  const ok = raw === '#main' || (sameDoc && !!mainId && hash === '#' + encodeURIComponent(mainId)) ||
    (sameDoc && !!mainId && decodeURIComponent(hash) === '#' + mainId);
  return {
    isSkipLink: ok,
    href: raw,
    mainId: mainId || null,
    reason: ok ? null : `first focused link has href="${raw}", expected "#main"` +
      (mainId && mainId !== 'main' ? ` or "#${mainId}" (the id of <main>)` : main ? '' : ' (and the page has no <main>)'),
  };
}

function reflowCheck() {
  const vw = window.innerWidth;
  const docEl = document.documentElement;
  const scrollWidth = docEl.scrollWidth;
  const ok = scrollWidth <= vw + 1;
  const res = { viewportWidth: vw, scrollWidth, ok, offenders: [], offenderCount: 0 };
  if (ok || !document.body) return res;
  const sx = window.scrollX;
  const found = [];
  let visited = 0;
  const visit = (el) => {
    if (++visited > 200000) return;
    const cs = getComputedStyle(el);
    if (cs.display === 'none') return;
    const r = el.getBoundingClientRect();
    const left = r.left + sx;
    const boxRight = r.right + sx;
    let extent = boxRight, why = 'box';
    const clips = cs.overflowX !== 'visible';
    if (!clips && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      const contentRight = left + el.scrollWidth;
      if (contentRight > extent) { extent = contentRight; why = 'content'; }
    }
    if (extent > vw + 1 && cs.position !== 'fixed') {
      found.push({ el, left, extent, width: Math.max(r.width, why === 'content' ? el.scrollWidth : 0), why,
        nowrap: /nowrap|pre/.test(cs.whiteSpace) || cs.textWrapMode === 'nowrap' });
    }
    // Children of a scroll/clip container cannot widen the page beyond the container itself.
    if (clips && el !== docEl && el !== document.body) return;
    if (el.namespaceURI === 'http://www.w3.org/2000/svg') return;
    for (const c of el.children) visit(c);
  };
  visit(document.body);
  // drop ancestors whose overflow is explained by an offending descendant
  const trimmed = found.length > 3000 ? found.slice(-3000) : found;
  // (an element whose content overflows is explained by any offending descendant;
  // an element whose own box is too wide only by a descendant reaching as far)
  const leaves = trimmed.filter((a) => !trimmed.some((b) => b !== a && a.el.contains(b.el) &&
    (a.why === 'content' || b.extent >= a.extent - 1)));
  leaves.sort((a, b) => b.width - a.width || b.extent - a.extent);
  res.offenderCount = leaves.length;
  // group look-alike offenders (same tag, id, class and cause); the widest comes first
  const groups = new Map();
  for (const { el, width, extent, why, nowrap } of leaves) {
    const cls = (typeof el.className === 'string' ? el.className : (el.getAttribute('class') || '')).trim();
    const key = [el.tagName, el.id, cls, why].join('|');
    const g = groups.get(key);
    if (g) { g.count++; continue; }
    const text = (el.innerText || el.textContent || el.getAttribute('alt') || '').replace(/\s+/g, ' ').trim().slice(0, 50);
    groups.set(key, {
      tag: el.tagName.toLowerCase(),
      id: el.id || null,
      class: cls || null,
      width: Math.round(width),
      right: Math.round(extent),
      cause: (why === 'content' ? 'its content overflows (e.g. long unbreakable text)' : 'element box wider than viewport') +
        (nowrap ? ' (white-space: nowrap/pre)' : ''),
      text,
      count: 1,
    });
  }
  res.offenders = [...groups.values()].slice(0, 8);
  return res;
}

async function runAxeInPage(opts) {
  // eslint-disable-next-line no-undef
  const r = await axe.run(document, opts);
  // axe leaves the contrast of text inside a scrolling region "incomplete" (it cannot see the background
  // behind an overflow box): measure it here from the computed colours, text against the first opaque
  // background up its ancestors, with WCAG's 4.5:1 (3:1 for large text)
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r0, g0, b0]) => [r0, g0, b0].map((v) => { const x = v / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const scrolled = [];
  for (const item of r.incomplete.filter((i) => i.id === 'color-contrast')) {
    for (const n of item.nodes) {
      const el = document.querySelector(n.target[0]);
      if (!el) continue;
      const st = getComputedStyle(el);
      let bg = null;
      for (let a = el; a && !bg; a = a.parentElement) {
        const c = rgb(getComputedStyle(a).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0.99)) bg = c;
      }
      const [l1, l2] = [lum(rgb(st.color)), lum(bg || [255, 255, 255])].sort((a, b) => b - a);
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      const size = parseFloat(st.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) scrolled.push({ target: n.target.join(' | '), html: n.html.slice(0, 200), ratio });
    }
  }
  const extra = scrolled.length ? [{ id: 'color-contrast-in-scroll-region', impact: 'serious', help: 'Text inside a scrolling region has contrast below WCAG AA', helpUrl: '', nodes: scrolled.map((x) => ({ target: [x.target], html: x.html, failureSummary: `contrast ${x.ratio.toFixed(2)}:1` })) }] : [];
  return [...r.violations, ...extra].map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    helpUrl: v.helpUrl,
    nodeCount: v.nodes.length,
    nodes: v.nodes.slice(0, 5).map((n) => ({
      target: n.target.map((t) => (Array.isArray(t) ? t.join(' >>> ') : String(t))).join(' | '),
      html: n.html.replace(/\s+/g, ' ').slice(0, 200),
      summary: (n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 300),
    })),
  }));
}

function settle() {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => { if (!done) { done = true; resolve(); } };
    requestAnimationFrame(() => requestAnimationFrame(finish));
    setTimeout(finish, 150);
  });
}

function resetFocusAndScroll() {
  if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
  window.scrollTo(0, 0);
}

// ---------------------------------------------------------------- per-page audit
async function auditPage(ctx, rel) {
  const { browser, baseUrl, axeSource, opts } = ctx;
  const limit = ctx.limits.get(rel);
  const limitMs = limit.sec * 1000;
  const url = baseUrl + rel.split('/').map(encodeURIComponent).join('/');
  const t0 = Date.now();
  const result = {
    page: rel,
    url,
    ok: false,
    durationMs: 0,
    failures: [],
    warnings: [],
    facts: null,
    axe: {},
    axeSummary: null,
    reflow: null,
    keyboard: null,
    sort: null,
    offline: { ok: true, externalRequests: [] },
    localErrors: [],
    consoleErrors: [],
    screenshots: [],
    error: null,
    timeLimit: limit,
    timedOut: false,
  };
  const state = { stage: 'opening page', since: Date.now() };
  result.timingsMs = {};
  const stage = (name) => {
    const now = Date.now();
    result.timingsMs[state.stage] = (result.timingsMs[state.stage] || 0) + (now - state.since);
    state.stage = name;
    state.since = now;
  };
  let page;
  const work = (async () => {
    // a window of its own, so the page keeps rendering (screenshots, rAF) while another page is audited
    page = await browser.newPage({ type: 'window' });
    const cdp = await page.createCDPSession();
    await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: true });
    await page.setViewport({ ...WIDE, deviceScaleFactor: 1 });
    page.setDefaultTimeout(limitMs);
    await page.setRequestInterception(true);
    const origin = new URL(baseUrl).origin;
    page.on('request', (req) => {
      const u = req.url();
      let local = false;
      if (/^(data|blob|about):/i.test(u)) local = true;
      else {
        try { local = new URL(u).origin === origin; } catch { local = false; }
      }
      if (!local) {
        if (!result.offline.externalRequests.some((x) => x.url === u)) {
          result.offline.externalRequests.push({ url: u, type: req.resourceType() });
        }
      }
      if (req.isInterceptResolutionHandled && req.isInterceptResolutionHandled()) return;
      const p = local ? req.continue() : req.abort('blockedbyclient');
      Promise.resolve(p).catch(() => {});
    });
    page.on('response', (resp) => {
      const u = resp.url();
      // Chromium asks for /favicon.ico by itself; that is not the page's request.
      if (u.startsWith(origin) && resp.status() >= 400 && !(u === origin + '/favicon.ico' && !state.declaresIcon)) {
        result.localErrors.push(`${resp.status()} ${u.slice(origin.length)}`);
      }
    });
    page.on('pageerror', (err) => {
      if (result.consoleErrors.length < 20) result.consoleErrors.push(`uncaught: ${String(err.message || err).slice(0, 300)}`);
    });
    page.on('console', (msg) => {
      const t = msg.text();
      if (/ERR_BLOCKED_BY_CLIENT|status of 404/.test(t)) return; // reported via offline / localErrors
      if (msg.type() === 'error' && result.consoleErrors.length < 20) result.consoleErrors.push(t.slice(0, 300));
    });

    stage('loading page');
    const resp = await page.goto(url, { waitUntil: 'load', timeout: limitMs });
    if (!resp || !resp.ok()) throw new Error(`HTTP ${resp ? resp.status() : 'no response'} for ${url}`);
    await page.waitForNetworkIdle({ idleTime: 200, timeout: 3000 }).catch(() => {});
    await page.evaluate(() => (document.fonts ? document.fonts.ready.then(() => true) : true)).catch(() => {});

    // ---- page facts
    stage('page facts');
    const f = await page.evaluate(pageFacts);
    state.declaresIcon = f.declaresIcon;
    const problems = [];
    if (!f.lang || !f.lang.trim()) problems.push('<html> has no lang attribute');
    const title = (f.title || '').trim();
    if (!title) problems.push('<title> is missing or empty');
    else if (/^notebook$/i.test(title)) problems.push(`<title> is just "${title}"; give the page a descriptive title`);
    if (f.h1Count !== 1) problems.push(`page has ${f.h1Count} <h1> elements, expected exactly 1`);
    if (f.mainCount === 0) problems.push('no <main> landmark');
    if (f.viewport === null) problems.push('no <meta name="viewport">');
    else if (!/width\s*=\s*device-width/i.test(f.viewport)) {
      result.warnings.push(`meta viewport content "${f.viewport}" lacks width=device-width`);
    }
    result.facts = { ...f, ok: problems.length === 0, problems };
    for (const p of problems) result.failures.push(`page facts: ${p}`);

    // ---- keyboard walk at 1280
    stage('keyboard walk');
    result.keyboard = await keyboardWalk(page, f);
    for (const p of result.keyboard.problems) result.failures.push(`keyboard: ${p}`);

    // ---- axe at 1280
    stage('axe 1280');
    await page.evaluate(resetFocusAndScroll);
    result.axe['1280'] = await runAxe(page, axeSource);
    if (opts.screenshots.includes(rel)) {
      stage('screenshot 1280');
      await shoot(page, rel, 1280, opts.out, result);
    }
    if (f.hasSummary) {  // the summary at 1280x720: every row on the page, none in an inner scroll box
      stage('summary 1280x720');
      await page.setViewport({ ...SUMMARY_VIEW, deviceScaleFactor: 1 });
      await summaryAt(page, '1280x720', result);
      if (opts.screenshots.includes(rel)) await shoot(page, rel, '1280x720', opts.out, result);
    }

    // ---- 320: reflow + axe
    stage('resize to 320');
    await page.setViewport({ ...NARROW, deviceScaleFactor: 1 });
    await page.evaluate(resetFocusAndScroll);
    await page.evaluate(settle);
    stage('reflow 320');
    result.reflow = await page.evaluate(reflowCheck);
    if (!result.reflow.ok) {
      const offs = result.reflow.offenders.slice(0, 3)
        .map((o) => `<${o.tag}${o.id ? ' id=' + o.id : ''}${o.class ? ' class="' + o.class + '"' : ''}> ${o.width}px` +
          (o.count > 1 ? ` (x${o.count}, widest shown)` : ''))
        .join('; ');
      result.failures.push(`reflow: at 320 px the page scrolls horizontally (document width ${result.reflow.scrollWidth}px)` +
        (offs ? `; widest offenders: ${offs}` : ''));
    }
    if (f.hasSummary) {
      stage('summary 320');
      await summaryAt(page, '320', result);
    }
    stage('axe 320');
    result.axe['320'] = await runAxe(page, axeSource);
    if (f.hasPaperCells) {
      stage('print sizes');
      await page.emulateMediaType('print');
      const sizes = await page.evaluate(printSizesCheck);
      await page.emulateMediaType(null);
      result.printSizes = { cells: sizes.cells, smaller: sizes.bad.length };
      if (sizes.bad.length) {
        result.failures.push(`print: ${sizes.bad.length} of ${sizes.cells} numbers smaller than their state label; ` +
          sizes.bad.slice(0, 3).join('; '));
      }
    }
    if (opts.screenshots.includes(rel)) {
      stage('screenshot 320');
      await shoot(page, rel, 320, opts.out, result);
    }
    stage('sort buttons');  // last: it reorders the rows that the screenshots show in served order
    result.sort = await sortCheck(page);
    if (result.sort) for (const p of result.sort.problems) result.failures.push(`sort: ${p}`);

    // ---- axe summary
    const rules = new Map();
    for (const [vp, list] of Object.entries(result.axe)) {
      for (const v of list) {
        const cur = rules.get(v.id) || { id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, nodes: 0, viewports: [] };
        cur.nodes = Math.max(cur.nodes, v.nodeCount);
        cur.viewports.push(vp);
        rules.set(v.id, cur);
      }
    }
    const all = [...rules.values()];
    const failing = all.filter((r) => FAIL_IMPACTS.has(r.impact));
    const minor = all.filter((r) => !FAIL_IMPACTS.has(r.impact));
    result.axeSummary = {
      seriousOrCritical: failing.length,
      seriousOrCriticalNodes: failing.reduce((s, r) => s + r.nodes, 0),
      minorOrModerate: minor.length,
      minorOrModerateNodes: minor.reduce((s, r) => s + r.nodes, 0),
      rules: all,
    };
    for (const r of failing) {
      result.failures.push(`axe ${r.impact}: ${r.id} (${r.help}) on ${r.nodes} element(s) at ${r.viewports.join('+')} px`);
    }
    for (const r of minor) {
      result.warnings.push(`axe ${r.impact}: ${r.id} (${r.help}) on ${r.nodes} element(s) at ${r.viewports.join('+')} px`);
    }
  })();

  let timer;
  const TIMED_OUT = Symbol('timed out');
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(TIMED_OUT), limitMs); });
  try {
    if (await Promise.race([work, timeout]) === TIMED_OUT) {
      result.timedOut = true;
      result.error = `timed out after ${limit.sec} s during ${state.stage}`;
      result.failures.push(timeoutMessage({ limit, stage: state.stage }));
      work.catch(() => {});
    }
  } catch (e) {
    result.error = `${state.stage}: ${e.message.split('\n')[0]}`;
    result.failures.push(`error: ${result.error}`);
    work.catch(() => {});
  } finally {
    clearTimeout(timer);
    stage('done');
    if (page) {
      await Promise.race([page.close().catch(() => {}), new Promise((r) => setTimeout(r, 10000).unref())]);
    }
  }

  // offline check (collected by the request listener)
  const ext = result.offline.externalRequests;
  result.offline.ok = ext.length === 0;
  for (const r of ext.slice(0, 10)) result.failures.push(`offline: request to another host: ${r.url} (${r.type})`);
  if (ext.length > 10) result.failures.push(`offline: ... and ${ext.length - 10} more external requests`);
  for (const l of result.localErrors.slice(0, 10)) result.warnings.push(`broken local resource: ${l}`);
  result.ok = result.failures.length === 0;
  result.durationMs = Date.now() - t0;
  return result;
}

async function summaryAt(page, label, result) {
  await page.evaluate(resetFocusAndScroll);
  await page.evaluate(settle);
  const r = await page.evaluate(summaryCheck, MIN_CHART_PX);
  result.summaryRows = { ...(result.summaryRows || {}), [label]: { rows: r.rows, visible: r.visible } };
  for (const p of r.problems.slice(0, 10)) result.failures.push(`summary at ${label}: ${p}`);
  if (r.problems.length > 10) result.failures.push(`summary at ${label}: ... and ${r.problems.length - 10} more`);
}

async function runAxe(page, axeSource) {
  const has = await page.evaluate(() => typeof window.axe === 'object' && typeof window.axe.run === 'function');
  if (!has) await page.evaluate(axeSource);
  return page.evaluate(runAxeInPage, {
    runOnly: { type: 'tag', values: AXE_TAGS },
    resultTypes: ['violations', 'incomplete'],
  });
}

async function shoot(page, rel, width, outDir, result) {
  const name = rel.replace(/\.html?$/i, '').replace(/[\\/]/g, '_') + `-${width}.png`;
  const file = path.join(outDir, name);
  try {
    await page.evaluate(resetFocusAndScroll);
    await page.screenshot({ path: file, fullPage: true, captureBeyondViewport: true });
    result.screenshots.push(name);
  } catch (e) {
    result.warnings.push(`screenshot ${name} failed: ${e.message.split('\n')[0]}`);
  }
}

// The first table whose headers carry buttons: press each with Enter (then the one that changed the first
// row with Space) and read the headers' aria-sort, the first body row and the live regions. null: no such table.
function sortState(index, press) {
  const table = [...document.querySelectorAll('table')].find((t) => t.querySelector('thead th > button'));
  if (!table) return null;
  const heads = [...table.tHead.rows[0].cells];
  const buttons = heads.map((th) => th.querySelector(':scope > button'));
  const clean = (s) => s.replace(/[\u25B2\u25BC\u2191\u2193]/g, '').trim();
  const state = {
    buttons: buttons.filter(Boolean).length,
    rows: table.tBodies[0] ? table.tBodies[0].rows.length : 0,
    first: table.tBodies[0] && table.tBodies[0].rows[0] ? table.tBodies[0].rows[0].textContent.trim() : '',
    sorts: heads.map((th) => th.getAttribute('aria-sort')),
    live: [...document.querySelectorAll('[aria-live], [role="status"]')].map((e) => e.textContent.trim()).filter(Boolean),
    label: buttons[index] ? clean(buttons[index].textContent) : '',
    focused: false,
  };
  if (press && buttons[index]) { buttons[index].focus(); state.focused = document.activeElement === buttons[index]; }
  return state;
}

async function sortCheck(page) {
  const start = await page.evaluate(sortState, 0, false);
  if (!start) return null;
  const out = { buttons: start.buttons, rows: start.rows, reordered: null, problems: [] };
  const pressed = async (index, key) => {
    const before = await page.evaluate(sortState, index, true);
    if (!before.focused) { out.problems.push(`sort button ${index + 1} ("${before.label}") cannot take focus`); return null; }
    await page.keyboard.press(key);
    const after = await page.evaluate(sortState, index, false);
    const dir = after.sorts[index];
    const others = after.sorts.filter((v, i) => i !== index && v !== null && v !== 'none');
    if (dir !== 'ascending' && dir !== 'descending') {
      out.problems.push(`${key} on sort button "${before.label}" left its <th> without aria-sort ascending/descending (${dir})`);
    } else if (others.length) {
      out.problems.push(`after sorting by "${before.label}", ${others.length} other header(s) still carry aria-sort`);
    } else if (!after.live.some((t) => t.includes(before.label) && t.includes(dir))) {
      out.problems.push(`no live region says the order after sorting by "${before.label}" (${dir})`);
    }
    return { before, after, dir };
  };
  for (let i = 0; i < start.buttons && out.problems.length === 0; i++) {
    const r = await pressed(i, 'Enter');
    if (r && r.after.first !== start.first) {
      out.reordered = r.before.label;
      const back = await pressed(i, 'Space');
      if (back && back.dir === r.dir) out.problems.push(`Space on "${r.before.label}" did not reverse the order (${r.dir})`);
      break;
    }
  }
  if (!out.problems.length && out.reordered === null && start.rows > 1) {
    out.problems.push(`Enter on each of the ${start.buttons} sort buttons left the first row unchanged`);
  }
  return out;
}

async function keyboardWalk(page, facts) {
  const kb = {
    ok: false,
    focusableCount: 0,
    presses: 0,
    stops: 0,
    completed: false,
    capped: false,
    firstFocus: null,
    skipLink: null,
    skipLinkMovesFocus: null,
    focusAfterSkip: null,
    invisible: [],
    noIndicator: [],
    trap: null,
    problems: [],
    path: [],
  };
  const { focusables, scrollers } = await page.evaluate(countFocusables);
  kb.focusableCount = focusables + scrollers;
  const budget = Math.min(kb.focusableCount + 5, WALK_CAP);

  await page.evaluate(resetFocusAndScroll);
  const seen = new Set();
  let firstId = null, prevId = null, same = 0, noneRun = 0;
  for (let i = 0; i < budget; i++) {
    await page.keyboard.press('Tab');
    kb.presses++;
    const a = await page.evaluate(describeActive);
    if (a.none) {
      if (seen.size > 0) { kb.completed = true; break; } // focus left the document: walk wrapped around
      if (++noneRun >= 3) break; // nothing focusable
      continue;
    }
    if (firstId === null) {
      firstId = a.id;
      kb.firstFocus = { selector: a.selector, tag: a.tag, href: a.href, text: a.text };
      kb.skipLink = await page.evaluate(skipLinkInfo);
    } else if (a.id === firstId) {
      kb.completed = true; // wrapped back to the first stop
      break;
    }
    if (a.id === prevId) {
      same++;
      if (same >= 2 && kb.focusableCount > 1) {
        kb.trap = { selector: a.selector, text: a.text, presses: same + 1 };
        break;
      }
      continue;
    }
    same = 0;
    prevId = a.id;
    if (seen.has(a.id)) {
      // focus returned to an element seen before without wrapping: cycle / trap among several elements
      if (!kb.cycle) kb.cycle = { selector: a.selector, afterStops: seen.size };
      continue;
    }
    seen.add(a.id);
    kb.path.push({ selector: a.selector, text: a.text, ok: a.visible && a.indicator });
    if (!a.visible) kb.invisible.push({ selector: a.selector, text: a.text, problems: a.visibilityProblems, rect: a.rect });
    if (!a.indicator) kb.noIndicator.push({ selector: a.selector, text: a.text, outline: a.outline, boxShadow: a.boxShadow });
  }
  kb.stops = seen.size;
  if (!kb.completed && !kb.trap && kb.presses >= budget) kb.capped = true;

  const probs = kb.problems;
  if (!kb.firstFocus) {
    probs.push('Tab reached no focusable element (expected a skip link first)');
  } else if (!kb.skipLink.isSkipLink) {
    probs.push(`first Tab stop is not a skip link: ${kb.firstFocus.selector}` +
      (kb.firstFocus.text ? ` "${kb.firstFocus.text}"` : '') + ` (${kb.skipLink.reason}); ` +
      'expected <a class="skip-link" href="#main">Skip to main content</a> as the first focusable element');
  } else {
    // Enter on the skip link must move focus to <main> (or into it)
    await page.evaluate(resetFocusAndScroll);
    const refocused = await page.evaluate(() => {
      const first = window.__siteCheck && window.__siteCheck.first;
      if (!first || !first.isConnected) return false;
      first.focus();
      return document.activeElement === first;
    });
    if (!refocused) {
      probs.push('could not re-focus the skip link to test Enter');
    } else {
      await page.keyboard.press('Enter');
      await page.evaluate(settle);
      const after = await page.evaluate(describeActive);
      kb.focusAfterSkip = after.none ? '<body>' : after.selector;
      kb.skipLinkMovesFocus = !after.none && after.inMain;
      if (!kb.skipLinkMovesFocus) {
        const hint = facts.mainCount === 0 ? 'the page has no <main>'
          : facts.mainTabindex === null ? 'add tabindex="-1" to <main> so it can take focus'
            : `check that the link target matches <main id="${facts.mainId || ''}">`;
        probs.push(`pressing Enter on the skip link left focus on ${kb.focusAfterSkip}, not on/inside <main> (${hint})`);
      }
    }
  }
  if (kb.invisible.length) {
    probs.push(`${kb.invisible.length} focus stop(s) not visible when focused: ` +
      kb.invisible.slice(0, 5).map((x) => `${x.selector} [${x.problems.join(', ')}]`).join('; '));
  }
  if (kb.noIndicator.length) {
    probs.push(`${kb.noIndicator.length} focus stop(s) without a focus indicator (outline none/0 and no box-shadow): ` +
      kb.noIndicator.slice(0, 5).map((x) => x.selector + (x.text ? ` "${x.text.slice(0, 30)}"` : '')).join('; '));
  }
  if (kb.trap) probs.push(`keyboard trap: focus stayed on ${kb.trap.selector} for ${kb.trap.presses} consecutive Tab presses`);
  else if (kb.cycle && !kb.completed && kb.stops < kb.focusableCount) {
    probs.push(`possible keyboard trap: focus cycled back to ${kb.cycle.selector} after ${kb.cycle.afterStops} stops ` +
      `without reaching the other focusable elements (${kb.focusableCount} on the page)`);
  }
  kb.ok = probs.length === 0;
  return kb;
}

// ---------------------------------------------------------------- reporting
function pad(s, n) { s = String(s); return s.length >= n ? s : s + ' '.repeat(n - s.length); }

function rowCells(p) {
  const a = p.axeSummary;
  const kb = p.keyboard;
  const seriousCell = a ? (a.seriousOrCritical ? `${a.seriousOrCritical} (${a.seriousOrCriticalNodes} el.)` : '0') : 'n/a';
  const minorCell = a ? (a.minorOrModerate ? `${a.minorOrModerate} (${a.minorOrModerateNodes} el.)` : '0') : 'n/a';
  const reflow = p.reflow ? (p.reflow.ok ? 'ok' : `FAIL (${p.reflow.scrollWidth}px)`) : 'n/a';
  const kbCell = kb ? `${kb.ok ? 'ok' : 'FAIL'} (${kb.stops} stops${kb.capped ? ', capped' : ''})` : 'n/a';
  const offline = p.offline.ok ? 'ok' : `FAIL (${p.offline.externalRequests.length} ext.)`;
  const facts = p.facts ? (p.facts.ok ? 'ok' : `FAIL (${p.facts.problems.length})`) : 'n/a';
  return [p.page, p.ok ? 'PASS' : p.timedOut ? 'TIME-OUT' : 'FAIL', seriousCell, minorCell, reflow, kbCell, offline, facts];
}

const HEADERS = ['Page', 'Result', 'Serious/critical', 'Minor/moderate', 'Reflow 320', 'Keyboard', 'Offline', 'Page facts'];

function textTable(pages) {
  const rows = [HEADERS, ...pages.map(rowCells)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r, k) => {
    const line = r.map((c, i) => pad(c, widths[i])).join('  ').trimEnd();
    return k === 0 ? line + '\n' + widths.map((w) => '-'.repeat(w)).join('  ') : line;
  }).join('\n');
}

function mdEscape(s) { return String(s).replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }

function markdown(report) {
  const L = [];
  const s = report.summary;
  L.push('# Site check report', '');
  L.push(`- Site: \`${report.site}\` (${s.pages} pages)`);
  L.push(`- Result: **${s.failed ? `${s.failed} of ${s.pages} pages FAIL` : 'all pages pass'}**` +
    (s.timedOut ? ` (${s.timedOut} of them time-outs, not accessibility findings: raise --timeout)` : ''));
  L.push(`- Browser: ${report.browser}; puppeteer-core ${report.versions['puppeteer-core']}; axe-core ${report.versions['axe-core']} ` +
    `(tags ${AXE_TAGS.join(', ')}; fail on serious/critical)`);
  const o = report.options;
  L.push(`- Time limit per page: ceil(${o.timeoutSec} s + ${o.timeoutPer1000Sec} s per 1000 elements x ` +
    `max(1, concurrency ${o.concurrency} / ${o.cpus} CPUs)); largest: ` +
    [...report.pages].sort((a, b) => b.timeLimit.sec - a.timeLimit.sec).slice(0, 3)
      .map((p) => `${mdEscape(p.page)} ${p.timeLimit.sec} s (${p.timeLimit.elements} elements, took ` +
        `${(p.durationMs / 1000).toFixed(1)} s)`).join('; '));
  L.push(`- Generated ${report.generated} in ${report.durationSec} s`, '');
  L.push('| ' + HEADERS.join(' | ') + ' |');
  L.push('|' + HEADERS.map(() => '---').join('|') + '|');
  for (const p of report.pages) L.push('| ' + rowCells(p).map(mdEscape).join(' | ') + ' |');
  L.push('');
  const failing = report.pages.filter((p) => !p.ok);
  if (failing.length) {
    L.push('## Failures', '');
    for (const p of failing) {
      L.push(`### ${p.page}`, '');
      for (const f of p.failures) L.push(`- ${mdEscape(f)}`);
      const serious = (p.axeSummary ? p.axeSummary.rules : []).filter((r) => FAIL_IMPACTS.has(r.impact));
      if (serious.length) {
        L.push('', 'axe details (first elements):', '');
        for (const r of serious) {
          const list = p.axe[r.viewports[0]].find((v) => v.id === r.id);
          L.push(`- **${r.id}** (${r.impact}, ${r.nodes} el.) ${mdEscape(r.help)} — ${r.helpUrl}`);
          for (const n of list.nodes) {
            L.push(`  - \`${n.target.replace(/`/g, "'")}\`: \`${n.html.slice(0, 140).replace(/`/g, "'")}\``);
          }
          if (list.nodes[0] && list.nodes[0].summary) L.push(`  - ${mdEscape(list.nodes[0].summary)}`);
        }
      }
      if (p.reflow && !p.reflow.ok && p.reflow.offenders.length) {
        L.push('', `reflow offenders at 320 px (${p.reflow.offenderCount} total):`, '');
        for (const o of p.reflow.offenders) {
          L.push(`- \`<${o.tag}${o.id ? ' id="' + o.id + '"' : ''}${o.class ? ' class="' + o.class + '"' : ''}>\` ` +
            `width ${o.width}px, right edge ${o.right}px: ${o.cause}` + (o.count > 1 ? ` (${o.count} such elements, widest shown)` : '') +
            (o.text ? ` — "${mdEscape(o.text)}"` : ''));
        }
      }
      L.push('');
    }
  }
  const warned = report.pages.filter((p) => p.warnings.length);
  if (warned.length) {
    L.push('## Non-failing findings (minor/moderate axe rules, warnings)', '');
    for (const p of warned) {
      L.push(`### ${p.page}`, '');
      for (const w of p.warnings) L.push(`- ${mdEscape(w)}`);
      L.push('');
    }
  }
  return L.join('\n') + '\n';
}

// ---------------------------------------------------------------- main
function shortPath(p) {
  const rel = path.relative(process.cwd(), p);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? p : rel;
}

async function main() {
  const opts = parseCli(process.argv.slice(2));
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 18) throw new SetupError(`Node ${process.versions.node} is too old; need Node 18+ (20 recommended).`);
  const st = await fsp.stat(opts.site).catch(() => null);
  if (!st || !st.isDirectory()) throw new SetupError(`--site ${opts.site} is not a directory (build the site first).`);
  const allPages = await discoverPages(opts.site);
  if (!allPages.length) throw new SetupError(`no *.html files under ${opts.site}`);
  let pages = allPages;
  if (opts.only.length) {
    const missing = opts.only.filter((p) => !allPages.includes(p));
    if (missing.length) throw new SetupError(`--page not found under ${opts.site}: ${missing.join(', ')}`);
    pages = allPages.filter((p) => opts.only.includes(p));
  }
  const missingShots = opts.screenshots.filter((p) => !pages.includes(p));
  if (missingShots.length) throw new SetupError(`--screenshot page not found (or not audited): ${missingShots.join(', ')}`);

  // each page's time limit, from its size, before the browser starts
  const cpus = cpuCount();
  const limits = new Map();
  for (const rel of pages) {
    const html = await fsp.readFile(path.join(opts.site, rel));
    const elements = countElements(html.toString('utf8'));
    const share = Math.round(Math.max(1, opts.concurrency / cpus) * 100) / 100;
    const sec = pageTimeLimit({ elements, baseSec: opts.timeoutSec, per1000Sec: opts.per1000Sec, concurrency: opts.concurrency, cpus });
    limits.set(rel, { sec, baseSec: opts.timeoutSec, per1000Sec: opts.per1000Sec, elements, htmlBytes: html.length, share });
  }
  const maxLimitSec = Math.max(...[...limits.values()].map((l) => l.sec));

  const deps = await loadDeps();
  const chrome = findChrome();
  try {
    await fsp.mkdir(opts.out, { recursive: true });
  } catch (e) {
    throw new SetupError(`cannot create --out ${opts.out}: ${e.message}`);
  }

  const t0 = Date.now();
  const server = await startServer(opts.site);
  const baseUrl = `http://127.0.0.1:${server.address().port}/`;
  const args = ['--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--mute-audio'];
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--no-sandbox');
  let browser;
  try {
    browser = await deps.puppeteer.launch({
      executablePath: chrome,
      headless: true,
      args,
      // a backstop for one browser call; each page's own limit (shorter) ends its audit first
      protocolTimeout: Math.max(maxLimitSec * 2 * 1000, 120000),
    });
  } catch (e) {
    server.close();
    throw new SetupError(`could not start Chromium at ${chrome}: ${e.message.split('\n').slice(0, 3).join(' ')}\n` +
      'Check that `' + chrome + ' --headless --no-sandbox --dump-dom about:blank` works, or set CHROME_PATH.');
  }
  let crashed = false, closing = false;
  browser.on('disconnected', () => { if (!closing) crashed = true; });
  const browserVersion = await browser.version();
  if (!opts.quiet) console.error(`site-check: ${pages.length} pages from ${opts.site} via ${baseUrl} (${browserVersion})`);

  const ctx = { browser, baseUrl, axeSource: deps.axeSource, opts, limits };
  const results = new Array(pages.length);
  let next = 0;
  const worker = async () => {
    while (next < pages.length && !crashed) {
      const i = next++;
      const r = await auditPage(ctx, pages[i]);
      results[i] = r;
      if (!opts.quiet) {
        console.error(`  ${r.ok ? 'PASS' : r.timedOut ? 'TIME-OUT' : 'FAIL'} ${r.page} ` +
          `(${(r.durationMs / 1000).toFixed(1)} s of its ${r.timeLimit.sec} s limit${r.error ? ', ' + r.error : ''})`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, pages.length) }, worker));
  } finally {
    closing = true;
    await browser.close().catch(() => {});
    server.close();
  }
  if (crashed) {
    throw new SetupError('Chromium exited unexpectedly during the audit (out of memory? try --concurrency 1); no report written.');
  }

  const failed = results.filter((r) => !r.ok).length;
  const timedOut = results.filter((r) => r.timedOut).length;
  const report = {
    tool: 'vqalib site-check',
    generated: new Date().toISOString(),
    site: shortPath(opts.site),
    browser: browserVersion,
    chromePath: chrome,
    versions: deps.versions,
    options: {
      axeTags: AXE_TAGS,
      failImpacts: [...FAIL_IMPACTS],
      viewports: [WIDE, NARROW],
      timeoutSec: opts.timeoutSec,
      timeoutPer1000Sec: opts.per1000Sec,
      cpus,
      concurrency: opts.concurrency,
      screenshots: opts.screenshots,
    },
    durationSec: Math.round((Date.now() - t0) / 100) / 10,
    summary: { pages: results.length, passed: results.length - failed, failed, timedOut },
    pages: results,
  };
  await fsp.writeFile(path.join(opts.out, 'report.json'), JSON.stringify(report, null, 2) + '\n');
  const md = markdown(report);
  await fsp.writeFile(path.join(opts.out, 'report.md'), md);

  console.log(textTable(results));
  console.log('');
  if (failed) {
    console.log(`${failed} of ${results.length} pages FAIL. Failures:`);
    if (!opts.quiet) {
      for (const r of results.filter((x) => !x.ok)) {
        for (const f of r.failures) console.log(`  ${r.page}: ${f.length > 220 ? f.slice(0, 217) + '...' : f}`);
      }
    }
    if (timedOut) {
      console.log(`${timedOut} of these page(s) timed out: that is no accessibility finding, the audit ran out of time ` +
        `(limit = ${opts.timeoutSec} s + ${opts.per1000Sec} s per 1000 elements). Rerun with a larger --timeout.`);
    }
  } else {
    console.log(`All ${results.length} pages pass.`);
  }
  console.log(`Report: ${path.join(shortPath(opts.out), 'report.md')} (details), report.json (everything); ${report.durationSec} s`);
  return failed ? 1 : 0;
}

// Run only as a script: `import` of this file (selftest, tests) gets the pure helpers above.
function runAsScript() {
  try {
    return !!process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (runAsScript()) {
  main().then(
    (code) => { process.exitCode = code; },
    (e) => {
      if (e instanceof SetupError) {
        console.error(`site-check setup error: ${e.message}`);
      } else {
        console.error(`site-check internal error: ${e && e.stack ? e.stack : e}`);
      }
      process.exitCode = 2;
    },
  );
}
