import { describe, expect, it } from "vitest";
import { code, frontMatter, html, scriptSafe, table, text, vPre } from "./markdown.js";

describe("text", () => {
  it("escapes Markdown syntax and table pipes and folds newlines into spaces", () => {
    expect(text("a|b *c* [d](e) {{ f }}\nnext")).toBe("a\\|b \\*c\\* \\[d\\]\\(e\\) \\{\\{ f \\}\\} next");
    expect(text("plain words")).toBe("plain words");
  });
});

describe("code", () => {
  it("uses a fence longer than any backtick run inside", () => {
    expect(code("ports/a/")).toBe("`ports/a/`");
    expect(code("a``b")).toBe("```a``b```");
    expect(code("`x`")).toBe("`` `x` ``");
  });
});

describe("table", () => {
  it("writes a header, a delimiter row and one line per row", () => {
    expect(table(["A", "B"], [["1", "2"]])).toBe("| A | B |\n| --- | --- |\n| 1 | 2 |");
  });
});

describe("vPre", () => {
  it("fences the body with more colons than the body holds", () => {
    const wrapped = vPre("::: tip\nx\n:::");
    expect(wrapped.startsWith(":::: v-pre\n")).toBe(true);
    expect(wrapped.trimEnd().endsWith("\n::::")).toBe(true);
  });
});

describe("frontMatter", () => {
  it("quotes values", () => {
    expect(frontMatter({ title: 'a "b": c' })).toBe('---\ntitle: "a \\"b\\": c"\n---\n\n');
  });
});

describe("html", () => {
  it("escapes the characters that would open markup or end an attribute", () => {
    expect(html(`<img src=x onerror="a('b')"> & c`)).toBe(
      "&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt; &amp; c",
    );
  });
});

describe("scriptSafe", () => {
  it("breaks every closing-tag opener in nested strings and keeps other values", () => {
    const safe = scriptSafe({ title: "a</script>b", list: ["</style>", 1], flag: true, none: null });
    expect(JSON.stringify(safe)).not.toContain("</");
    expect(safe.title.replace(/\u200b/g, "")).toBe("a</script>b");
    expect(safe.list[1]).toBe(1);
    expect(safe.flag).toBe(true);
    expect(safe.none).toBeNull();
  });
});
