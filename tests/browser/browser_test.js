// The report and the live page in a real browser: headless Debian chromium, driven by
// playwright-core (web/package-lock.json). Fails on any console error or page error; checks
// that every chart rendered the marks the synthetic study implies (tests/analysis/
// synthetic_sweep.h: 30 runs, 28 reach the target, one diverges at step 5, one is pending;
// gns_* logged by the 20 runs with K > 1, 19 of which ran), that hovering a point names its run
// and configuration, that a legend entry toggles its series, and that the live page picks up a
// run that starts while it is open. Saves screenshots under OUT_DIR.
//
// Usage: node browser_test.js REPORT_DIR LIVE_URL OUT_DIR ADVANCE_COMMAND...
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { chromium } = require(process.env.BATCHLAB_WEB_MODULES + '/playwright-core');

const [reportDir, liveUrl, outDir, ...advance] = process.argv.slice(2);
const failures = [];
let passed = 0;
function check(ok, what) {
  if (ok) {
    passed++;
  } else {
    failures.push(what);
    console.log('FAIL: ' + what);
  }
}

function csvRows(name) {
  const lines = fs.readFileSync(path.join(reportDir, name), 'utf8').trim().split(/\r?\n/);
  return lines.slice(1).map((l) => l.split(','));
}

// What the study implies, from the fixture's definition and the report's own tables.
const frontier = csvRows('pareto.csv').length;
const projection = csvRows('projection.csv');
const projectedFrontier = projection.filter((r) => r[r.length - 1] === 'yes').length;
const strong = csvRows('scaling_strong.csv');
const strongGroups = new Set(strong.map((r) => r[0])).size;
function expected(runsWithCurves) {
  return {
    steps_to_target: { reached_marks: 28, not_reached_marks: 1, fit_marks: 1 },
    pareto: { runs_marks: 28, frontier_marks: 1, labels_marks: frontier, not_reached_marks: 1 },
    curve_loss: { curves_marks: runsWithCurves },
    curve_test_loss: { curves_marks: runsWithCurves },
    curve_test_accuracy: { curves_marks: runsWithCurves },
    curve_lr: { curves_marks: runsWithCurves },
    gns: { series_marks: 19 },
    scaling: { lines_marks: strongGroups, points_marks: strong.length },
    projection: { points_marks: projection.length, labels_marks: projectedFrontier },
  };
}

// Marks per named layer of every chart: each item of a mark group is one child element
// (a symbol, a text, or one line of a line mark faceted by run).
async function countMarks(page) {
  return page.evaluate(() => {
    const out = {};
    for (const fig of document.querySelectorAll('figure.chart')) {
      const counts = {};
      for (const g of fig.querySelectorAll('g.role-mark')) {
        const name = [...g.classList].find((c) => c.endsWith('_marks'));
        if (name) counts[name] = (counts[name] || 0) + g.children.length;
      }
      out[fig.id.replace(/^chart-/, '')] = counts;
    }
    return out;
  });
}

function compareMarks(got, want, where) {
  check(JSON.stringify(Object.keys(got).sort()) === JSON.stringify(Object.keys(want).sort()),
        `${where}: charts ${Object.keys(got)} != ${Object.keys(want)}`);
  for (const [chart, marks] of Object.entries(want)) {
    for (const [mark, n] of Object.entries(marks)) {
      const have = (got[chart] || {})[mark];
      check(have === n, `${where}: chart ${chart} layer ${mark}: ${have} marks, expected ${n}`);
    }
  }
}

function watchErrors(page, where) {
  page.on('console', (m) => {
    if (m.type() === 'error') failures.push(`${where}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => failures.push(`${where}: page error: ${e.message}`));
  page.on('requestfailed', (r) => failures.push(`${where}: request failed: ${r.url()}`));
}

async function rendered(page) {
  await page.waitForFunction(() => document.body.dataset.charts === 'rendered', null,
                             { timeout: 60000 });
}

const t0 = Date.now();
function log(what) {
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}`);
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  // A fresh profile (--user-data-dir, which playwright sets from this argument).
  const profile = fs.mkdtempSync(path.join(require('os').tmpdir(), 'batchlab-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    // Nothing may be loaded from anywhere but the report file and the local server.
    await context.route(/^(?!file:|http:\/\/127\.0\.0\.1:)/, (route) => {
      failures.push('tried to load ' + route.request().url());
      route.abort();
    });
    log('chromium started');
    // ---- The report file, offline. ----
    const page = await context.newPage();
    watchErrors(page, 'report');
    await page.goto('file://' + path.resolve(reportDir, 'report.html'));
    await rendered(page);
    log('report rendered');
    compareMarks(await countMarks(page), expected(29), 'report');
    const readings = await page.$$eval('figure.chart figcaption', (f) => f.map((x) => x.textContent));
    check(readings.length === 9 && readings.every((r) => r.length > 20 && r.endsWith('.')),
          'every chart has a one-sentence reading: ' + JSON.stringify(readings));

    // Hover a Pareto point: the tooltip names its run and configuration.
    const point = page.locator('#chart-pareto g.runs_marks path').first();
    await point.scrollIntoViewIfNeeded();
    const box = await point.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const tip = page.locator('#vg-tooltip-element');
    await tip.waitFor({ state: 'visible', timeout: 10000 });
    const text = await tip.textContent();
    check(/[0-9a-f]{16}/.test(text) && /B=\d+ K=\d+/.test(text) && text.includes('config'),
          'the Pareto tooltip names run and config: ' + text);

    // Click the legend entry of B=32 on the loss chart: only its 5 runs stay opaque.
    const legend = page.locator('#chart-curve_loss g.role-legend-label text', { hasText: /^32$/ });
    await legend.scrollIntoViewIfNeeded();
    await legend.click();
    await page.waitForTimeout(300);
    const opacities = await page.$$eval('#chart-curve_loss g.curves_marks path',
                                        (ps) => ps.map((p) => p.getAttribute('opacity') || '1'));
    const opaque = opacities.filter((o) => Number(o) === 1).length;
    check(opaque === 5 && opacities.length === 29,
          `legend toggle: ${opaque} of ${opacities.length} loss lines opaque, expected 5 of 29`);
    await page.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });
    await page.close();

    // ---- The live page of `batchlab ui`. ----
    const live = await context.newPage();
    watchErrors(live, 'live');
    await live.goto(liveUrl);
    await rendered(live);
    log('live page rendered');
    await live.waitForFunction(() => Number(document.body.dataset.polls || 0) >= 1, null,
                               { timeout: 20000 });
    check(await live.locator('#live tbody tr').count() === 30, 'the live table lists 30 runs');
    compareMarks(await countMarks(live), expected(29), 'live');
    // A run starts and logs metrics: the table shows it running at its step, and the charts
    // are redrawn with its curves.
    execFileSync(advance[0], advance.slice(1), { stdio: 'inherit' });
    log('run started');
    await live.waitForFunction(() => Number(document.body.dataset.reloads || 0) >= 1 &&
                                     document.body.dataset.charts === 'rendered',
                               null, { timeout: 30000 });
    log('live page reloaded');
    const rows = await live.$$eval('#live tbody tr', (trs) => trs.map(
        (tr) => [...tr.children].map((td) => td.textContent)));
    const running = rows.filter((cells) => cells[2] === 'running');
    check(running.length === 1 && running[0][3] === '3' && running[0][5].includes('test_accuracy=0.42'),
          'the live table shows the started run at step 3 with its eval: ' + JSON.stringify(running));
    const after = await countMarks(live);
    check(after.curve_loss && after.curve_loss.curves_marks === 30,
          'after the run started the loss chart has 30 lines: ' + JSON.stringify(after.curve_loss));
    await live.screenshot({ path: path.join(outDir, 'live.png'), fullPage: true });
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failures.length} failed`);
  for (const f of failures) console.log('  ' + f);
  process.exit(failures.length === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log('FAIL: ' + e.stack);
  process.exit(1);
});
