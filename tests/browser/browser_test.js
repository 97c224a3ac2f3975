// The report and the live page in a real browser: headless Debian chromium, driven by
// playwright-core (web/package-lock.json). Fails on any console error or page error; checks
// that every chart rendered the marks the synthetic study implies (tests/analysis/
// synthetic_sweep.h: 30 runs, 28 reach the target, one diverges at step 5, one is pending;
// gns_* logged by the 20 runs with K > 1, 19 of which ran), that hovering a point names its run
// and configuration, that a legend entry toggles its series, and that the live page picks up a
// run that starts while it is open. On it and on a wide study (tests/browser/make_study_db.cc
// `wide`: 9 batch sizes × 3 rank counts) it checks the layout: no two visible texts of a chart
// overlap or touch (tick labels, titles, legend entries, point labels), no text leaves its chart,
// rank counts have a shape legend, the x axis of the curves toggles between samples and step,
// and no table cell wraps. Saves a screenshot of every chart and page under OUT_DIR.
// BATCHLAB_BROWSER_EXTRA_REPORTS (report folders, ':'-separated; e.g. the quickstart's) are
// checked for layout the same way.
//
// Usage: node browser_test.js REPORT_DIR WIDE_REPORT_DIR LIVE_URL OUT_DIR ADVANCE_COMMAND...
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { chromium } = require(process.env.BATCHLAB_WEB_MODULES + '/playwright-core');

const [reportDir, wideDir, liveUrl, outDir, ...advance] = process.argv.slice(2);
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

function csvTable(name) {
  const lines = fs.readFileSync(path.join(reportDir, name), 'utf8').trim().split(/\r?\n/);
  return { header: lines[0].split(','), rows: lines.slice(1).map((l) => l.split(',')) };
}
function csvRows(name) {
  return csvTable(name).rows;
}

// What the study implies, from the fixture's definition and the report's own tables.
const frontier = csvRows('pareto.csv').length;
const projectionTable = csvTable('projection.csv');
const projection = projectionTable.rows;
const frontierColumn = projectionTable.header.indexOf('frontier');
const projectedFrontier = projection.filter((r) => r[frontierColumn] === 'yes').length;
// The best LR per batch size the report found (the lr_law chart's data, from the study's LR
// grid): a filled point where the best lies inside the LRs tried, an open one at the grid's edge.
const reportCharts = JSON.parse(fs.readFileSync(path.join(reportDir, 'report.html'), 'utf8')
  .match(/<script type="application\/json" id="batchlab-charts">([\s\S]*?)<\/script>/)[1]);
const lrChart = reportCharts.find((c) => c.id === 'lr_law');
const bestLrs = lrChart ? lrChart.spec.layer.find((l) => l.name === 'points').data.values : [];
// A strong-scaling row with a flag is not a result (its efficiency is empty): it is not drawn.
const strong = csvRows('scaling_strong.csv').filter((r) => r[7] !== '');
const strongGroups = new Set(strong.map((r) => r[0])).size;
function expected(runsWithCurves) {
  return {
    steps_to_target: { reached_marks: 28, best_marks: 5, not_reached_marks: 1, fit_marks: 1 },
    pareto: { runs_marks: 28, frontier_marks: 1, not_reached_marks: 1 },
    curve_loss: { curves_marks: runsWithCurves },
    curve_test_loss: { curves_marks: runsWithCurves },
    curve_test_accuracy: { curves_marks: runsWithCurves },
    curve_lr: { curves_marks: runsWithCurves },
    gns: { series_marks: 19 },
    scaling: { lines_marks: strongGroups, points_marks: strong.length },
    projection: { points_marks: projection.length, frontier_marks: projectedFrontier > 0 ? 1 : 0 },
    ...(lrChart ? { lr_law: { points_marks: bestLrs.filter((b) => b.filled).length,
                              edge_points_marks: bestLrs.filter((b) => !b.filled).length } } : {}),
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

// Every chart's visible texts (opacity 0 is how Vega hides a thinned-out label) as boxes, and the
// chart's own box.
async function chartTexts(page) {
  return page.evaluate(() => {
    const out = {};
    for (const fig of document.querySelectorAll('figure.chart')) {
      const svg = fig.querySelector('svg');
      if (!svg) continue;
      const texts = [];
      for (const t of svg.querySelectorAll('text')) {
        if (!t.textContent.trim()) continue;
        let hidden = false;
        for (let e = t; e && e !== svg; e = e.parentElement) {
          const o = e.getAttribute('opacity') ?? e.style.opacity;
          if ((o !== null && o !== '' && Number(o) === 0) || e.style.display === 'none') hidden = true;
        }
        if (hidden) continue;
        const r = t.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        texts.push({ text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom });
      }
      const b = svg.getBoundingClientRect();
      out[fig.id.replace(/^chart-/, '')] = { texts, box: { x0: b.left, y0: b.top, x1: b.right, y1: b.bottom } };
    }
    return out;
  });
}

// Fails on two visible texts of one chart that overlap or touch side by side (a gap under 2 px
// on one line reads as one word: "0.010.02"), and on a text outside its chart.
function checkNoOverlap(charts, where) {
  let pairs = 0;
  for (const [id, { texts, box }] of Object.entries(charts)) {
    const bad = [];
    for (let i = 0; i < texts.length; i++) {
      const a = texts[i];
      if (a.x0 < box.x0 - 1 || a.x1 > box.x1 + 1 || a.y0 < box.y0 - 1 || a.y1 > box.y1 + 1) {
        bad.push(`"${a.text}" leaves the chart`);
      }
      for (let j = i + 1; j < texts.length; j++) {
        const b = texts[j];
        pairs++;
        // Glyph boxes of stacked lines may share a pixel row; side by side they must be apart.
        const dy = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
        const dx = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
        if (dy > 1.5 && dx > -2) bad.push(`"${a.text}" and "${b.text}"`);
      }
    }
    check(bad.length === 0, `${where}: chart ${id}: texts overlap: ${bad.slice(0, 6).join('; ')}`);
  }
  return pairs;
}

// No table cell wraps: each is one line high (the best run's configuration wrapped to five).
async function checkNoWrappedCells(page, where) {
  const wrapped = await page.evaluate(() => {
    const out = [];
    for (const table of document.querySelectorAll('#report table')) {
      const cells = [...table.querySelectorAll('td, th')];
      const line = Math.min(...cells.map((c) => c.getBoundingClientRect().height));
      for (const c of cells) {
        if (c.getBoundingClientRect().height > line * 1.5) out.push(c.textContent.slice(0, 60));
      }
    }
    return out;
  });
  check(wrapped.length === 0, `${where}: table cells wrap: ${JSON.stringify(wrapped.slice(0, 5))}`);
}

async function screenshotCharts(page, prefix) {
  for (const fig of await page.$$('figure.chart')) {
    const id = (await fig.getAttribute('id')).replace(/^chart-/, '');
    await fig.screenshot({ path: path.join(outDir, `${prefix}-${id}.png`) });
  }
}

// A report opened from disk: rendered without errors, no overlap, no wrapped cell, one
// screenshot per chart. Returns the page (open).
async function checkLayout(context, dir, where) {
  const page = await context.newPage();
  watchErrors(page, where);
  await page.goto('file://' + path.resolve(dir, 'report.html'));
  await rendered(page);
  const texts = await chartTexts(page);
  check(Object.keys(texts).length >= 5, `${where}: ${Object.keys(texts).length} charts drawn`);
  const pairs = checkNoOverlap(texts, where);
  await checkNoWrappedCells(page, where);
  await screenshotCharts(page, where);
  await page.screenshot({ path: path.join(outDir, `${where}.png`), fullPage: true });
  log(`${where}: layout checked (${Object.keys(texts).length} charts, ${pairs} text pairs)`);
  return page;
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
    const page = await checkLayout(context, reportDir, 'report');
    log('report rendered');
    const marks = await countMarks(page);
    compareMarks(marks, expected(29), 'report');
    // The point labels are those the report placed (where there is room), at least half the
    // frontier here.
    const labelled = await page.evaluate(() => {
      const out = {};
      for (const c of JSON.parse(document.getElementById('batchlab-charts').textContent)) {
        for (const l of c.spec.layer || []) {
          if (l.name === 'labels') out[c.id] = l.data.values.length;
        }
      }
      return out;
    });
    // At least half the frontier, or 5 labels where a long frontier leaves no room for more.
    check(marks.pareto.labels_marks === labelled.pareto &&
          labelled.pareto >= Math.min(5, Math.ceil(frontier / 2)),
          `pareto labels: ${marks.pareto.labels_marks} drawn, ${labelled.pareto} placed, frontier ${frontier}`);
    check(marks.projection.labels_marks === labelled.projection &&
          labelled.projection >= Math.min(5, Math.ceil(projectedFrontier / 2)),
          `projection labels: ${marks.projection.labels_marks} drawn, ${labelled.projection} placed, frontier ${projectedFrontier}`);
    const readings = await page.$$eval('figure.chart figcaption', (f) => f.map((x) => x.textContent));
    // The synthetic study has two LRs per batch size: the chart lists a best LR for each.
    check(lrChart && bestLrs.length >= 2,
          `the lr_law chart lists the best LR of ${bestLrs.length} batch sizes ` +
          `(${bestLrs.filter((b) => b.filled).length} inside the LRs tried)`);
    check(readings.length === Object.keys(expected(29)).length &&
          readings.every((r) => r.length > 20 && r.endsWith('.')),
          'every chart has a one-sentence reading: ' + JSON.stringify(readings));
    // The runs' rank counts (1, 2, 4) have a shape legend on the steps and Pareto charts (with
    // the projection's rank counts: one K mapping across the report).
    for (const id of ['steps_to_target', 'pareto']) {
      const legends = await page.$$eval(`#chart-${id} g.role-legend`, (ls) => ls.map((l) => [
        [...l.querySelectorAll('g.role-legend-title text')].map((t) => t.textContent).join(''),
        [...l.querySelectorAll('g.role-legend-label text')].map((t) => t.textContent).join(',')]));
      check(legends.some(([title, labels]) => title === 'ranks (K)' &&
                         ['1', '2', '4'].every((k) => labels.split(',').includes(k))),
            `${id}: a "ranks (K)" legend with 1, 2, 4: ${JSON.stringify(legends)}`);
    }

    // The curves' x axis: samples seen, and step after a click on the toggle.
    const lossTitles = await page.$$eval('#chart-curve_loss g.role-axis-title text',
                                         (ts) => ts.map((t) => t.textContent));
    check(lossTitles.includes('samples seen'), 'the loss chart is drawn over samples: ' + lossTitles);
    await page.locator('#chart-curve_loss .x-axis input[value="step"]').check();
    await page.waitForFunction(() => document.getElementById('chart-curve_loss').dataset.xAxis === 'step',
                               null, { timeout: 10000 });
    const stepTitles = await page.$$eval('#chart-curve_loss g.role-axis-title text',
                                         (ts) => ts.map((t) => t.textContent));
    const stepLines = await page.$$eval('#chart-curve_loss g.curves_marks path', (ps) => ps.length);
    check(stepTitles.includes('step') && !stepTitles.includes('samples seen') && stepLines === 29,
          `the toggle redraws the loss chart over steps: ${stepTitles}, ${stepLines} lines`);
    await page.locator('#chart-curve_loss .x-axis input[value="samples"]').check();
    await page.waitForFunction(() => document.getElementById('chart-curve_loss').dataset.xAxis === 'samples',
                               null, { timeout: 10000 });

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
    // The batch-size legend is the first (the rank-count legend may have a 32 too).
    const legend = page.locator('#chart-curve_loss g.role-legend-label text', { hasText: /^32$/ })
      .first();
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

    // ---- A wide study: 9 batch sizes (16 .. 4096) × 2 LRs × 3 rank counts. ----
    const wide = await checkLayout(context, wideDir, 'wide');
    const wideMarks = await countMarks(wide);
    check(wideMarks.steps_to_target && wideMarks.steps_to_target.reached_marks === 52 &&
          wideMarks.steps_to_target.best_marks === 9,
          'wide: 52 runs reached the target, 9 best ringed: ' + JSON.stringify(wideMarks.steps_to_target));
    check(wideMarks.curve_loss && wideMarks.curve_loss.curves_marks === 53,
          'wide: 53 loss lines: ' + JSON.stringify(wideMarks.curve_loss));
    const ticks = await wide.$$eval('#chart-steps_to_target g.role-axis', (axes) => axes.map(
        (a) => [...a.querySelectorAll('g.role-axis-label text')]
            .filter((t) => Number(t.getAttribute('opacity') ?? 1) !== 0).map((t) => t.textContent)));
    check(ticks.some((t) => t.join(',') === '16,32,64,128,256,512,1024,2048,4096'),
          'wide: the batch-size axis is labelled at every batch size: ' + JSON.stringify(ticks));
    await wide.close();
    for (const extra of (process.env.BATCHLAB_BROWSER_EXTRA_REPORTS || '').split(':').filter(Boolean)) {
      await (await checkLayout(context, extra, path.basename(extra))).close();
    }

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
