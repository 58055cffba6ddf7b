// Opens a page of `tracemodel report` or `tracemodel diff -o` in headless Chromium and checks
// that it renders without a console error; that every number it marks
// (`data-check="analysis.row.field"`) equals the analyses' JSON the page carries, within the
// digits shown, and is written in people's units (thousands separated; a time with its unit,
// `data-unit`, in its column's header); that every chart has labelled axes with ticks; and
// that no text of a chart is cut off. Saves a screenshot.
//
//   node report.mjs PAGE.html SCREENSHOT.png
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node report.mjs PAGE.html SCREENSHOT.png');
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
                                        args: ['--no-sandbox'] });
let failed = '';
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(pathToFileURL(report).href);
  const result = await page.evaluate(() => {
    const data = JSON.parse(document.getElementById('tracemodel-data').textContent);
    const wrong = [];
    let checked = 0, times = 0;
    const grouped = /^-?\d{1,3}(,\d{3})*(\.\d+)?$/;
    for (const el of document.querySelectorAll('[data-check]')) {
      const path = el.getAttribute('data-check').split('.');
      // Field names may hold dots: analysis.row.rest
      const want = data[path[0]]?.[Number(path[1])]?.[path.slice(2).join('.')];
      const text = el.textContent;
      if (!grouped.test(text)) wrong.push(`${path.join('.')}: "${text}" is not a grouped number`);
      const scale = Number(el.getAttribute('data-scale') ?? 1);
      const decimals = text.includes('.') ? text.length - text.indexOf('.') - 1 : 0;
      const shown = Number(text.replaceAll(',', '')) * scale;
      const within = 0.5 * 10 ** -decimals * scale + 1e-9 * Math.max(1, Math.abs(want));
      if (typeof want !== 'number' || !(Math.abs(shown - want) <= within))
        wrong.push(`${path.join('.')}: shows ${text} (x${scale}), JSON has ${want}`);
      ++checked;
    }
    // A time's unit is in its column's header.
    for (const el of document.querySelectorAll('td [data-unit]')) {
      const td = el.closest('td');
      const header = td.closest('table').rows[0].cells[td.cellIndex]?.textContent ?? '';
      const unit = el.getAttribute('data-unit');
      if (!['µs', 'ms', 's'].includes(unit)) wrong.push(`unit ${unit} is not µs, ms or s`);
      if (!header.includes(`(${unit})`)) wrong.push(`header "${header}" does not say ${unit}`);
      ++times;
    }
    // Charts: axes with ticks and a title, and no text outside the chart.
    const charts = document.querySelectorAll('svg.chart');
    for (const svg of charts) {
      const name = svg.getAttribute('aria-label');
      const axes = svg.querySelectorAll('g.axis');
      if (axes.length === 0) wrong.push(`chart "${name}" has no axis`);
      for (const axis of axes) {
        const ticks = [...axis.querySelectorAll('g.tick text')].filter((t) => t.textContent.trim());
        if (ticks.length < 2) wrong.push(`chart "${name}": an axis with ${ticks.length} labelled ticks`);
        if (!axis.querySelector('.axis-title')?.textContent.trim())
          wrong.push(`chart "${name}": an axis without a title`);
      }
      const box = svg.getBoundingClientRect();
      for (const t of svg.querySelectorAll('text')) {
        const r = t.getBoundingClientRect();
        if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 ||
            r.bottom > box.bottom + 0.5)
          wrong.push(`chart "${name}": "${t.textContent}" is cut off`);
      }
    }
    return { checked, times, wrong, charts: charts.length };
  });
  if (result.wrong.length) failed = result.wrong.length + ' problems: ' + result.wrong.slice(0, 20).join('; ');
  if (result.checked === 0) failed = 'no number to check';
  if (result.times === 0) failed = 'no time to check';
  if (result.charts === 0) failed = 'no chart';
  if (errors.length) failed = 'console errors: ' + errors.join('; ');
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`page rendered: ${result.checked} numbers checked (${result.times} times), ` +
              `${result.charts} charts${failed ? '' : ', no errors'}`);
} catch (e) {
  failed = String(e);
} finally {
  await browser.close();
}
if (failed) {
  console.error('FAILED: ' + failed);
  process.exit(1);
}
