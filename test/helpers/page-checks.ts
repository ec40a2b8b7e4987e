import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { screenshot } from './browser';

/** An accessibility violation axe-core found, reduced to what a failing test should print. */
export interface AxeFinding {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

let axeSource: string | undefined;

/**
 * Runs axe-core in the page and returns its serious and critical violations. axe is evaluated through the
 * DevTools protocol rather than added as a `<script>`, so the page's strict CSP (no inline script) stays on.
 *
 * @example
 * expect(await seriousAccessibilityViolations(page)).toEqual([]);
 */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeFinding[]> {
  return (await accessibilityViolations(page)).filter((finding) => finding.impact === 'serious' || finding.impact === 'critical');
}

/**
 * Every violation axe-core finds in the page, whatever its impact (a missing `<title>` and a page without a `main`
 * landmark alike).
 *
 * @example
 * expect(await accessibilityViolations(page)).toEqual([]);
 */
export async function accessibilityViolations(page: Page): Promise<AxeFinding[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const findings = await page.evaluate(async () => {
    type AxeResult = { violations: Array<{ id: string; impact?: string; help: string; nodes: Array<{ target: unknown[] }> }> };
    const axe = (globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<AxeResult> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact ?? 'unknown',
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(' ')),
    }));
  });
  return findings;
}

/** The phone width the pages are checked at (an iPhone 12–15 in CSS pixels). */
export const PHONE_WIDTH = 390;

/**
 * Checks a page as a person sees it: screenshots at desktop width and at 390 px (`<name>-desktop.png`,
 * `<name>-390.png` in test-artifacts/), nothing wider than the phone's screen, and no serious or critical axe
 * violation at either width (`everyImpact`: no violation at all). Restores the desktop viewport.
 *
 * @example
 * await checkPage(page, 'portal-login');
 * await checkPage(page, 'unknown-host', { everyImpact: true });
 */
export async function checkPage(page: Page, name: string, options: { everyImpact?: boolean } = {}): Promise<void> {
  const violations = options.everyImpact ? accessibilityViolations : seriousAccessibilityViolations;
  const desktop = page.viewportSize() ?? { width: 1280, height: 800 };
  await screenshot(page, `${name}-desktop`);
  expect({ page: name, width: 'desktop', violations: await violations(page) }).toEqual({
    page: name,
    width: 'desktop',
    violations: [],
  });
  await page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
  try {
    await screenshot(page, `${name}-${PHONE_WIDTH}`);
    const scrollWidth = await page.evaluate(
      () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
    );
    expect({ page: name, scrollWidth }).toEqual({ page: name, scrollWidth: PHONE_WIDTH });
    expect({ page: name, width: PHONE_WIDTH, violations: await violations(page) }).toEqual({
      page: name,
      width: PHONE_WIDTH,
      violations: [],
    });
  } finally {
    await page.setViewportSize(desktop);
  }
}
