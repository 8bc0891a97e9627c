import { RUN_TARGET_LABELS } from "../records/index.js";
import { METHOD_LABELS } from "./figure.js";
import { RECORD_KIND_LABELS } from "./records-page.js";

/** The words the records page's filters show for the values its cards carry. */
const FILTER_LABELS = {
  kind: RECORD_KIND_LABELS,
  method: METHOD_LABELS,
  where: { ...RUN_TARGET_LABELS, "local-unpublished": "local record, not published" },
};

/**
 * VitePress's default theme with one stylesheet and three behaviours added, each run on load and
 * after every route change:
 * - a figure's link shows its record: a record row sits in a collapsed section (or a filtered-out
 *   card), so on load, on a hash change and after a click on an in-page link the sections around
 *   the element the hash names are opened, filters that hide it are cleared, and it is scrolled
 *   into view;
 * - each table cell is labelled with its column's heading, so the stylesheet can stack a table's
 *   rows as cards on a narrow screen;
 * - the records page's list (class `record-list`) gets filters by port, kind, method, where it ran
 *   and date, kept in the page's address (`?port=…&since=…`) so a filtered list can be linked.
 */
export const THEME = `import DefaultTheme from "vitepress/theme";
import "./site.css";

const FILTERS = [
  ["port", "port", "every port"],
  ["kind", "kind", "every kind"],
  ["method", "method", "every method"],
  ["where", "where it ran", "anywhere"],
];
const LABELS = ${JSON.stringify(FILTER_LABELS)};

function labelTables() {
  for (const table of document.querySelectorAll(".vp-doc table:not([data-labelled])")) {
    const headers = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      Array.from(row.children).forEach((cell, i) => cell.setAttribute("data-label", headers[i] ?? ""));
    }
    table.setAttribute("data-labelled", "");
  }
}

function setUpRecordFilters() {
  const list = document.querySelector(".vp-doc ul.record-list:not([data-filtered])");
  if (list === null) return;
  list.setAttribute("data-filtered", "");
  const items = Array.from(list.children);
  const params = new URLSearchParams(window.location.search);
  const form = document.createElement("form");
  form.className = "record-filters";
  form.setAttribute("role", "search");
  const selects = FILTERS.map(([key, label, any]) => {
    const values = [...new Set(items.map((item) => item.dataset[key]).filter(Boolean))].sort();
    const select = document.createElement("select");
    select.name = key;
    select.append(new Option(any, ""), ...values.map((v) => new Option(LABELS[key]?.[v] ?? v, v)));
    select.value = values.includes(params.get(key)) ? params.get(key) : "";
    const wrap = document.createElement("label");
    wrap.append(label + " ", select);
    form.append(wrap);
    return select;
  });
  const since = document.createElement("input");
  since.type = "date";
  since.name = "since";
  since.value = /^\\d{4}-\\d{2}-\\d{2}$/.test(params.get("since") ?? "") ? params.get("since") : "";
  const sinceLabel = document.createElement("label");
  sinceLabel.append("since ", since);
  form.append(sinceLabel);
  const count = document.createElement("p");
  count.className = "record-count";
  count.setAttribute("aria-live", "polite");
  const apply = (write) => {
    let shown = 0;
    for (const item of items) {
      const visible =
        selects.every((s) => s.value === "" || item.dataset[s.name] === s.value) &&
        (since.value === "" || (item.dataset.date ?? "") >= since.value);
      item.hidden = !visible;
      if (visible) shown++;
    }
    count.textContent = shown + " of " + items.length + " records shown";
    if (!write) return;
    const query = new URLSearchParams();
    for (const s of selects) if (s.value !== "") query.set(s.name, s.value);
    if (since.value !== "") query.set("since", since.value);
    const search = query.toString();
    history.replaceState(history.state, "", window.location.pathname + (search ? "?" + search : "") + window.location.hash);
  };
  list.showAll = () => {
    for (const s of selects) s.value = "";
    since.value = "";
    apply(true);
  };
  form.addEventListener("change", () => apply(true));
  form.addEventListener("submit", (event) => event.preventDefault());
  list.before(form, count);
  apply(false);
}

function revealHash() {
  const id = decodeURIComponent(window.location.hash.slice(1));
  const target = id === "" ? null : document.getElementById(id);
  if (target === null) return;
  if (target.hidden) target.parentElement?.showAll?.();
  for (let at = target.parentElement; at !== null; at = at.parentElement) {
    if (at.tagName === "DETAILS") at.open = true;
  }
  target.scrollIntoView({ block: "center" });
}

export default {
  extends: DefaultTheme,
  enhanceApp({ router }) {
    if (typeof window === "undefined") return;
    const later = () =>
      setTimeout(() => {
        labelTables();
        setUpRecordFilters();
        revealHash();
      }, 50);
    window.addEventListener("hashchange", later);
    window.addEventListener("load", later);
    document.addEventListener("click", (event) => {
      if (event.target instanceof Element && event.target.closest('a[href*="#"]')) later();
    });
    router.onAfterRouteChange = later;
  },
};
`;

/**
 * On a large screen the page body takes the width beside the sidebar instead of the default
 * theme's reading column; on a narrow one (up to 640 px) each table row is a card of labelled
 * cells instead of a table wider than the screen; charts never exceed their column; and the
 * records page's filters wrap.
 */
export const THEME_CSS = `@media (min-width: 1280px) {
  .VPDoc .container { max-width: 1440px !important; }
  .VPDoc .content { max-width: none !important; }
  .VPDoc .content-container { max-width: none !important; }
}
.vp-doc img { max-width: 100%; height: auto; }
@media (max-width: 640px) {
  .vp-doc table { display: block; border: none; margin: 16px 0; overflow-x: visible; }
  .vp-doc table thead { display: none; }
  .vp-doc table tbody, .vp-doc table tr, .vp-doc table td { display: block; width: auto; }
  .vp-doc table tr { border: 1px solid var(--vp-c-divider); border-radius: 8px; margin: 0 0 12px; padding: 4px 0; }
  .vp-doc table td { border: none; padding: 4px 12px; overflow-wrap: anywhere; }
  .vp-doc table td[data-label]:not([data-label=""])::before {
    content: attr(data-label);
    display: block;
    font-size: 12px;
    font-weight: 600;
    color: var(--vp-c-text-2);
  }
}
.vp-doc td, .vp-doc ul.record-list > li { overflow-wrap: anywhere; }
.vp-doc ul.record-list > li { margin: 10px 0; }
.record-filters { display: flex; flex-wrap: wrap; gap: 8px 16px; margin: 16px 0 4px; }
.record-filters label { display: flex; gap: 6px; align-items: center; font-size: 14px; }
.record-filters select, .record-filters input {
  border: 1px solid var(--vp-c-divider);
  border-radius: 4px;
  padding: 2px 6px;
  max-width: 100%;
}
.record-count { font-size: 14px; color: var(--vp-c-text-2); }
`;
