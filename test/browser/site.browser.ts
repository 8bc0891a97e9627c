/// <reference lib="dom" />
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "cheerio";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../../src/catalog/index.js";
import { buildSite, type SiteServer, serveSite } from "../../src/site/index.js";

const REPO = join(import.meta.dirname, "../..");
/** Debian's chromium; never a browser a tool downloads for itself. */
const CHROMIUM = process.env.BRINGUP_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Where the screenshots go (gitignored); CI keeps them with its log. */
const SCREENSHOTS = process.env.BRINGUP_SCREENSHOTS ?? join(REPO, ".cache", "site-screenshots");
const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

let work: string;
let server: SiteServer;
let browser: Browser;
let pages: string[];
let origin: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-site-browser-"));
  const out = join(work, "site");
  await buildSite(await loadCatalog(REPO), out);
  pages = [
    "/index.html",
    "/records.html",
    ...(await readdir(join(out, "ports"))).map((name) => `/ports/${name}`),
  ];
  server = await serveSite(out, { port: 0 });
  origin = new URL(server.url).origin;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  await mkdir(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await rm(work, { recursive: true, force: true });
});

/** The HTML of a page of the site, parsed, cached: to check that a link's page and anchor exist. */
const parsed = new Map<string, ReturnType<typeof load> | undefined>();
async function sitePage(path: string): Promise<ReturnType<typeof load> | undefined> {
  if (!parsed.has(path)) {
    const response = await fetch(`${origin}${path}`);
    parsed.set(path, response.ok ? load(await response.text()) : undefined);
  }
  return parsed.get(path);
}

/** Each chart on the page: its smallest text as drawn, the SVG's font size scaled as the image is. */
async function phoneChartText(page: Page): Promise<{ src: string; smallest: number }[]> {
  const images = await page.$$eval('img[src*="/charts/"]', (list) =>
    list.map((image) => ({
      src: (image as HTMLImageElement).src,
      scale: (image as HTMLImageElement).clientWidth / (image as HTMLImageElement).naturalWidth,
    })),
  );
  const sizes: { src: string; smallest: number }[] = [];
  for (const image of images) {
    const svg = await (await fetch(image.src)).text();
    const fonts = [...svg.matchAll(/font-size="([0-9.]+)px"/g)].map((m) => Number(m[1]));
    sizes.push({ src: image.src, smallest: Math.min(...fonts) * image.scale });
  }
  return sizes;
}

describe("the site in a browser", () => {
  it("loads every page without console errors, every internal link resolves, every figure names its record and method", async () => {
    const problems: string[] = [];
    let linksChecked = 0;
    let figuresChecked = 0;
    for (const path of pages) {
      const context = await browser.newContext({ viewport: WIDTHS.desktop });
      const page = await context.newPage();
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`${path}: console error: ${message.text()}`);
      });
      page.on("pageerror", (error) => problems.push(`${path}: page error: ${error.message}`));
      page.on("response", (response) => {
        if (response.url().startsWith(origin) && response.status() >= 400)
          problems.push(`${path}: ${response.status()} for ${response.url()}`);
      });
      const response = await page.goto(`${origin}${path}`, { waitUntil: "networkidle" });
      if (response?.status() !== 200) problems.push(`${path}: status ${response?.status()}`);

      // Every internal link: its page exists and, with an anchor, so does the element it names.
      const links = await page.$$eval(".VPDoc a[href], .VPHome a[href]", (anchors) =>
        anchors.map((a) => (a as HTMLAnchorElement).href),
      );
      for (const href of links) {
        const url = new URL(href);
        if (url.origin !== origin) continue;
        linksChecked++;
        const target = await sitePage(url.pathname);
        if (target === undefined) problems.push(`${path}: dead link ${url.pathname}`);
        else if (url.hash !== "" && target(`[id="${decodeURIComponent(url.hash.slice(1))}"]`).length === 0)
          problems.push(`${path}: link ${url.pathname}${url.hash} names no element`);
      }

      // Every figure drawn from a record (a link to a record, or a chart) carries its id and method.
      const figures = await page.$$eval('a[href*="#record-"], img[src*="/charts/"]', (elements) =>
        elements.map((element) => ({
          html: element.outerHTML.slice(0, 120),
          record: element.getAttribute("data-record"),
          method: element.getAttribute("data-method"),
        })),
      );
      figuresChecked += figures.length;
      for (const figure of figures) {
        if (!figure.record || !figure.method)
          problems.push(`${path}: figure without record or method: ${figure.html}`);
      }
      const charts = await page.$$eval('img[src*="/charts/"]', (images) =>
        images.map((image) => ({
          src: (image as HTMLImageElement).src,
          width: (image as HTMLImageElement).naturalWidth,
        })),
      );
      for (const chart of charts)
        if (chart.width === 0) problems.push(`${path}: chart ${chart.src} did not load`);

      // No section is left empty: every heading of the page body has something after it.
      const empty = await page.$$eval(".vp-doc h2, .vp-doc h3", (headings) =>
        headings
          .filter((heading) => {
            const next = heading.nextElementSibling;
            return next === null || /^H[1-3]$/.test(next.tagName);
          })
          .map((heading) => heading.textContent ?? ""),
      );
      for (const heading of empty) problems.push(`${path}: empty section "${heading.trim()}"`);

      const name = path
        .replace(/^\//, "")
        .replace(/\//g, "_")
        .replace(/\.html$/, "");
      await page.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(WIDTHS.phone);
      // At phone width nothing is wider than the screen and nothing scrolls sideways: tables stack
      // their rows as cards of labelled cells.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 1) problems.push(`${path}: page ${overflow}px wider than a phone screen`);
      const sideways = await page.$$eval(".vp-doc table, .vp-doc td, .vp-doc li", (elements) =>
        elements
          .filter((element) => element.scrollWidth > element.clientWidth + 1)
          .map((element) => `${element.tagName} ${(element.textContent ?? "").slice(0, 40)}`),
      );
      for (const element of sideways) problems.push(`${path}: scrolls sideways at phone width: ${element}`);
      // Chart text, shrunk with its chart to the column, stays at least 9 px.
      for (const chart of await phoneChartText(page)) {
        if (chart.smallest < 9)
          problems.push(`${path}: chart ${chart.src} text ${chart.smallest.toFixed(1)}px`);
      }
      await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`), fullPage: true });
      await context.close();
    }
    expect(problems).toEqual([]);
    // The checks above looked at something: every page links, and the measured figures are there.
    expect(linksChecked).toBeGreaterThan(pages.length);
    expect(figuresChecked).toBeGreaterThan(pages.length);
  });

  it("shows the reference A/B's chart and figures with their records on MiMo's page", async () => {
    const page = await browser.newPage({ viewport: WIDTHS.desktop });
    await page.goto(`${origin}/ports/mimo-v2.6-flash.html`, { waitUntil: "networkidle" });
    const figures = await page.$$eval("[data-record]", (elements) =>
      elements.map((element) => element.getAttribute("data-record")),
    );
    expect(figures).toContain("mimo-v2.6-flash/reference-decode-ab-o64-b6.5");
    // Its own chart, and the chart of every run of the series, drawn up to it.
    expect(
      await page.locator('img[data-record="mimo-v2.6-flash/reference-decode-ab-o64-b6.5"]').count(),
    ).toBe(2);
    await page.close();
  });

  it("opens and scrolls to a figure's record, at 1280 and at 390 px, from a link or a URL", async () => {
    for (const viewport of [WIDTHS.desktop, WIDTHS.phone]) {
      const page = await browser.newPage({ viewport });
      await page.goto(`${origin}/ports/mimo-v2.6-flash.html`, { waitUntil: "networkidle" });
      // A figure links to its record's row, which sits in a collapsed section.
      const href = await page.evaluate(() => {
        for (const anchor of Array.from(document.querySelectorAll('.vp-doc a[href^="#record-"]'))) {
          const id = decodeURIComponent((anchor.getAttribute("href") as string).slice(1));
          if (document.getElementById(id)?.closest("details:not([open])")) return anchor.getAttribute("href");
        }
        return null;
      });
      expect(href).not.toBeNull();
      const hash = href as string;
      const link = page.locator(`.vp-doc a[href="${hash}"]`).first();
      const row = page.locator(`[id="${decodeURIComponent(hash.slice(1))}"]`);
      expect(await row.isVisible()).toBe(false);
      await link.click();
      await expect.poll(() => row.isVisible()).toBe(true);
      await expect
        .poll(() =>
          row.evaluate((element) => {
            const box = element.getBoundingClientRect();
            return box.top >= 0 && box.bottom <= window.innerHeight;
          }),
        )
        .toBe(true);
      // The same record opened from its URL.
      const fresh = await browser.newPage({ viewport });
      await fresh.goto(`${origin}/ports/mimo-v2.6-flash.html${hash}`, { waitUntil: "networkidle" });
      await expect
        .poll(() => fresh.locator(`[id="${decodeURIComponent(hash.slice(1))}"]`).isVisible())
        .toBe(true);
      await fresh.close();
      await page.close();
    }
  });

  it("cites MiMo's reference A/B by the series' pooled ratio and marks where each run ran", async () => {
    const page = await browser.newPage({ viewport: WIDTHS.desktop });
    await page.goto(`${origin}/ports/mimo-v2.6-flash.html`, { waitUntil: "networkidle" });
    const cell = page.locator('.vp-doc td a[data-record^="mimo-v2.6-flash/reference-decode-ab-o64-b6"]');
    expect(await cell.first().textContent()).toMatch(/^pooled over \d+ runs: .*ratio [0-9.]+x, 95% CI /);
    const forest = await page.$eval(
      'img[src$="reference-decode-ab-o64-b6.runs.svg"]',
      (image) => (image as HTMLImageElement).src,
    );
    const svg = await (await fetch(forest)).text();
    expect(svg).toContain(">bringup's CPU engine<");
    expect(svg).toContain(">pooled<");
    // The throughput-latency sweep, in view, naming its record and method.
    const sweep = page.locator('img[src$=".sweep.svg"]').first();
    expect(await sweep.getAttribute("data-method")).toBe("single-run");
    expect(await sweep.isVisible()).toBe(true);
    await page.close();
  });

  it("filters the records page by port, kind, method, where and date, kept in its address, at 1280 and 390 px", async () => {
    for (const viewport of [WIDTHS.desktop, WIDTHS.phone]) {
      const page = await browser.newPage({ viewport });
      await page.goto(`${origin}/records.html`, { waitUntil: "networkidle" });
      const cards = page.locator("ul.record-list > li");
      const all = await cards.count();
      expect(all).toBeGreaterThan(10);
      const visible = () =>
        page.$$eval("ul.record-list > li", (items) =>
          items
            .filter((item) => !(item as HTMLElement).hidden)
            .map((item) => ({ ...(item as HTMLElement).dataset })),
        );
      await page.selectOption('.record-filters select[name="port"]', "mimo-v2.6-flash");
      await page.selectOption('.record-filters select[name="kind"]', "gate");
      const gates = await visible();
      expect(gates.length).toBeGreaterThan(0);
      expect(gates.length).toBeLessThan(all);
      expect(gates.every((card) => card.port === "mimo-v2.6-flash" && card.kind === "gate")).toBe(true);
      expect(new URL(page.url()).search).toBe("?port=mimo-v2.6-flash&kind=gate");
      await page.selectOption('.record-filters select[name="where"]', "cpu-engine");
      await page.fill('.record-filters input[name="since"]', "2026-12-03");
      await page.dispatchEvent('.record-filters input[name="since"]', "change");
      const recent = await visible();
      expect(
        recent.every((card) => card.where === "cpu-engine" && (card.date as string) >= "2026-12-03"),
      ).toBe(true);
      expect(await page.locator(".record-count").textContent()).toBe(
        `${recent.length} of ${all} records shown`,
      );
      // The filtered list from its address; a record's own address shows it even when filtered out.
      const linked = await browser.newPage({ viewport });
      await linked.goto(`${origin}/records.html?port=mimo-v2.6-flash&kind=gate`, {
        waitUntil: "networkidle",
      });
      await expect.poll(() => linked.locator("ul.record-list > li:not([hidden])").count()).toBe(gates.length);
      const other = await linked.$eval("ul.record-list > li[hidden]", (item) => item.id);
      await linked.goto(`${origin}/records.html?port=mimo-v2.6-flash&kind=gate#${other}`, {
        waitUntil: "networkidle",
      });
      await expect.poll(() => linked.locator(`[id="${other}"]`).isVisible()).toBe(true);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(1);
      await linked.close();
      await page.close();
    }
  });

  it("keeps tables as tables at 1280 px and stacks them as labelled cards at 390 px", async () => {
    for (const [viewport, stacked] of [
      [WIDTHS.desktop, false],
      [WIDTHS.phone, true],
    ] as const) {
      const page = await browser.newPage({ viewport });
      await page.goto(`${origin}/ports/mimo-v2.6-flash.html`, { waitUntil: "networkidle" });
      const head = page.locator(".vp-doc table thead").first();
      expect(await head.isVisible()).toBe(!stacked);
      await expect
        .poll(() => page.locator(".vp-doc table td").first().getAttribute("data-label"))
        .not.toBeNull();
      await page.close();
    }
  });
});
