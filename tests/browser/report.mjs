// Opens `tracemodel report`'s page in headless Chromium, checks that it renders without a
// console error, that every number it marks (`data-check="analysis.row.field"`) equals the
// analyses' JSON the page carries, and saves a screenshot.
//
//   node report.mjs REPORT.html SCREENSHOT.png
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node report.mjs REPORT.html SCREENSHOT.png');
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
    let checked = 0;
    for (const el of document.querySelectorAll('[data-check]')) {
      const path = el.getAttribute('data-check').split('.');
      // Field names may hold dots ("idle_time(us)" does not, but be safe): analysis.row.rest
      const want = data[path[0]]?.[Number(path[1])]?.[path.slice(2).join('.')];
      const shown = Number(el.textContent);
      if (typeof want !== 'number' || !(Math.abs(shown - want) <= 1e-9 * Math.max(1, Math.abs(want))))
        wrong.push(`${path.join('.')}: shows ${el.textContent}, JSON has ${want}`);
      ++checked;
    }
    const svgs = document.querySelectorAll('svg').length;
    return { checked, wrong, svgs };
  });
  if (result.wrong.length) failed = 'numbers differ: ' + result.wrong.join('; ');
  if (result.checked === 0) failed = 'no number to check';
  if (errors.length) failed = 'console errors: ' + errors.join('; ');
  await page.screenshot({ path: screenshot, fullPage: false });
  console.log(`report rendered: ${result.checked} numbers checked, ${result.svgs} charts${failed ? '' : ', no errors'}`);
} catch (e) {
  failed = String(e);
} finally {
  await browser.close();
}
if (failed) {
  console.error('FAILED: ' + failed);
  process.exit(1);
}
