// Every signed-in page: open the live view, show the connection state and the inbox count,
// show times in the reader's clock, then hand over to the page's own module.

import { LiveView, socketUrl } from "./live.js";
import { ago, clock, exact, ZONE } from "./describe.js";
import * as notice from "./notice.js";

const live = new LiveView(socketUrl());
window.taskdeck = { live };

const conn = document.getElementById("conn");
const LABELS = { connecting: "Connecting…", live: "Live", resyncing: "Resyncing…", reconnecting: "Reconnecting…", offline: "Offline" };
live.on("status", (status, detail) => {
  if (!conn) return;
  conn.dataset.status = status;
  // live with a detail: the view lags ("live view 3 s behind", static/js/live.js)
  const lagging = status === "live" && Boolean(detail);
  if (lagging) conn.dataset.lag = "";
  else delete conn.dataset.lag;
  const text = conn.querySelector(".conn-text");
  text.hidden = false; // hidden in the HTML: without JavaScript a <noscript> says why nothing moves
  if (lagging) text.textContent = detail.charAt(0).toUpperCase() + detail.slice(1);
  else text.textContent = LABELS[status] + (detail && status === "offline" ? ` — ${detail}` : "");
  conn.title = lagging
    ? "The live view is behind the tasks; task pages show their current state"
    : status === "live"
      ? "Receiving changes as they happen"
      : LABELS[status];
});

const badge = document.getElementById("inbox-count");
// The server's count over every pending request (live.counts), not the requests of the
// tasks this socket holds; the held ones before the first counts arrive.
export function pendingCount() {
  const c = live.counts;
  if (c && typeof c.requests === "number") return { n: c.requests, more: Boolean(c.requestsMore) };
  return { n: Object.keys(live.pending).length, more: false };
}
window.taskdeck.pendingCount = pendingCount;
function updateBadge() {
  if (!badge) return;
  const { n, more } = pendingCount();
  badge.textContent = `${n.toLocaleString("en")}${more ? "+" : ""}`;
  badge.hidden = n === 0;
  badge.setAttribute("aria-label", `${n}${more ? " or more" : ""} pending request${n === 1 ? "" : "s"}`);
}
live.on("snapshot", updateBadge);
live.on("counts", updateBadge);
notice.start(live, pendingCount); // tab title and icon count pending approvals; opt-in notifications
notice.bindSwitch(document.getElementById("notify-switch"), document.getElementById("notify-note"));
live.on("change", (ids, pendingChanged) => pendingChanged && updateBadge());

// The server writes times in UTC and says so; here they become the reader's clock, and
// the page says whose: a header's [data-zone] and the footer name the browser's zone. A
// time gets its date when it is not today (always with data-show="date", as in the audit
// log), its age after it ("14:02 · 3 min ago"; not where a live counter follows it,
// data-age="no"), and the exact moment with the zone and UTC on hover.
function ageNode(iso, sep) {
  const span = document.createElement("span");
  span.className = "age";
  span.dataset.since = iso;
  span.dataset.sep = sep;
  span.dataset.local = "1"; // added here, not by the server: region refreshes keep it (fragments.js morph)
  span.textContent = `${sep}${ago(iso)}`;
  return span;
}

export function localiseTimes(root = document) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    if (t.dataset.localised) continue;
    const iso = t.getAttribute("datetime");
    const dated = t.dataset.show === "date";
    const text = clock(iso, { seconds: dated, date: dated });
    if (!text) continue;
    t.title = exact(iso);
    t.textContent = text;
    t.dataset.localised = "1";
    // in a table cell the age goes under the time (it wrapped after a lone "·" there)
    if (t.dataset.age !== "no") t.after(ageNode(iso, t.closest("td") ? "" : " · "));
  }
  for (const z of root.querySelectorAll("[data-zone]")) z.textContent = `(your time: ${ZONE})`;
  const foot = document.getElementById("zone-note");
  if (foot) foot.textContent = `Times are in ${ZONE}, this browser's zone; hover one for the exact moment and UTC.`;
}
localiseTimes();
window.taskdeck.localiseTimes = localiseTimes;

// Deadlines count down and waits count up, on every page, once a second.
function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const two = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${two(m)}:${two(s % 60)}` : `${m}:${two(s % 60)}`;
}
function tick() {
  const now = Date.now();
  for (const node of document.querySelectorAll("[data-countdown]")) {
    const left = new Date(node.dataset.countdown).getTime() - now;
    node.textContent = left > 0 ? duration(left) : "due now";
    node.classList.toggle("due", left <= 60000);
  }
  for (const node of document.querySelectorAll("[data-ago]")) {
    node.textContent = `${duration(now - new Date(node.dataset.ago).getTime())} ago`;
  }
  if (now - agesAt >= 15000) {
    agesAt = now;
    for (const node of document.querySelectorAll(".age[data-since]")) {
      const text = `${node.dataset.sep ?? " · "}${ago(node.dataset.since, now)}`;
      if (node.textContent !== text) node.textContent = text;
    }
  }
}
let agesAt = Date.now();
tick();
setInterval(tick, 1000);
window.taskdeck.tick = tick;

// Copy buttons: [data-copy] copies its value, [data-copy-from] the text of the node it
// names; the button says "Copied" for a moment (and a screen reader hears it).
document.addEventListener("click", async (e) => {
  const button = e.target.closest && e.target.closest("[data-copy], [data-copy-from]");
  if (!button) return;
  const from = button.dataset.copyFrom && document.getElementById(button.dataset.copyFrom);
  const text = from ? from.textContent : button.dataset.copy;
  let said = "Copied";
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {
    said = "Copy failed";
  }
  const label = button.textContent;
  button.textContent = said;
  button.setAttribute("aria-live", "polite");
  setTimeout(() => (button.textContent = label), 1500);
});

// "/" focuses the page's search box (board, inbox) unless one is typing already.
document.addEventListener("keydown", (e) => {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t.closest && t.closest("input, textarea, select, [contenteditable]")) return;
  const search = document.querySelector("input[type=search]");
  if (search) {
    e.preventDefault();
    search.focus();
    search.select();
  }
});

// The page's own module, named by its template with {% static %} (hashed in production,
// so it and its imports are the same module instances app.js uses).
const pageModule = document.body.dataset.module;
if (pageModule) {
  const mod = await import(pageModule);
  mod.start(live);
}
live.connect();
