// Drives a flame graph of `tally flame` in Chromium (playwright-core), for
// run-flame.py: node browser.js PLAYWRIGHT-CORE-DIR SPEC.json
// SPEC: { "svg": file, "profile": a fresh user-data directory, "steps": [
//   { "click": I } (click frame I of #frames, in document order),
//   { "unzoom": true } (click "Reset Zoom"), { "key": "Escape" },
//   { "type": TEXT } (press "/", then type TEXT), { "snap": NAME },
//   { "screenshot": FILE } ] }
// Prints a JSON object: each snap's frames as the browser shows them
// (x, width, label, classes, displayed), the "Matched" line and whether
// "Reset Zoom" shows; the dialogs, console errors and page errors seen;
// and window.tallyInjected (a test name sets it if its markup ran).
"use strict";
const fs = require("fs");
const { chromium } = require(process.argv[2]);
const spec = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));

(async () => {
  const ctx = await chromium.launchPersistentContext(spec.profile, {
    executablePath: "/usr/bin/chromium", headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
    viewport: { width: 1200, height: 900 } });
  const out = { snaps: {}, dialogs: [], errors: [], requests: [] };
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on("dialog", (d) => { out.dialogs.push(d.message()); d.dismiss(); });
  page.on("console", (m) => { if (m.type() === "error") out.errors.push(m.text()); });
  page.on("pageerror", (e) => out.errors.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) out.requests.push(r.url()); });
  await page.goto("file://" + spec.svg);
  for (const s of spec.steps) {
    if ("click" in s)
      await page.locator("#frames > g").nth(s.click).locator("rect").click();
    else if (s.unzoom)
      await page.click("#unzoom");
    else if (s.key)
      await page.keyboard.press(s.key);
    else if ("type" in s) {
      await page.keyboard.press("/");
      await page.keyboard.type(s.type);
    } else if (s.screenshot)
      await page.screenshot({ path: s.screenshot });
    else if (s.snap)
      out.snaps[s.snap] = await page.evaluate(() => {
        const frames = [...document.querySelectorAll("#frames > g")].map((g) => {
          const r = g.querySelector("rect"), t = g.querySelector("text");
          return { x: +r.getAttribute("x"), w: +r.getAttribute("width"),
                   label: t ? t.textContent : "", cls: g.getAttribute("class") || "",
                   shown: getComputedStyle(g).display !== "none"
                          && r.getBoundingClientRect().width > 0 };
        });
        const u = document.getElementById("unzoom");
        return { frames, matched: document.getElementById("matched").textContent,
                 unzoom: getComputedStyle(u).display !== "none",
                 focused: document.activeElement ? document.activeElement.id : "" };
      });
  }
  out.injected = await page.evaluate(() => window.tallyInjected || null);
  await ctx.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
