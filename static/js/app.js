// Every signed-in page: open the live view, show the connection state and the inbox count,
// show times in the reader's clock, then hand over to the page's own module.

import { LiveView, socketUrl } from "./live.js";
import { hhmm } from "./describe.js";
import * as notice from "./notice.js";

const live = new LiveView(socketUrl());
window.taskdeck = { live };

const conn = document.getElementById("conn");
const LABELS = { connecting: "Connecting…", live: "Live", resyncing: "Resyncing…", reconnecting: "Reconnecting…", offline: "Offline" };
live.on("status", (status, detail) => {
  if (!conn) return;
  conn.dataset.status = status;
  const text = conn.querySelector(".conn-text");
  text.textContent = LABELS[status] + (detail && status === "offline" ? ` — ${detail}` : "");
  conn.title = status === "live" ? "Receiving changes as they happen" : LABELS[status];
});

const badge = document.getElementById("inbox-count");
function updateBadge() {
  if (!badge) return;
  const n = Object.keys(live.pending).length;
  badge.textContent = String(n);
  badge.hidden = n === 0;
  badge.setAttribute("aria-label", `${n} pending request${n === 1 ? "" : "s"}`);
}
live.on("snapshot", updateBadge);
notice.start(live); // tab title and icon count pending approvals; opt-in notifications
notice.bindSwitch(document.getElementById("notify-switch"), document.getElementById("notify-note"));
live.on("change", (ids, pendingChanged) => pendingChanged && updateBadge());

// The server writes times in UTC and says so; here they become the reader's clock, so the
// page must say that instead: a header's [data-zone] names the browser's zone. A time gets
// its date when it is not today (and always with data-show="date", as in the audit log).
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";

function ymd(d) {
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
}

export function localiseTimes(root = document) {
  const today = ymd(new Date());
  for (const t of root.querySelectorAll("time[datetime]")) {
    if (t.dataset.localised) continue;
    const iso = t.getAttribute("datetime");
    const text = hhmm(iso, true);
    if (text) {
      const day = ymd(new Date(iso));
      t.title = `${iso} (UTC); shown in ${ZONE}`;
      t.textContent = t.dataset.show === "date" || day !== today ? `${day} ${text}` : text;
      t.dataset.localised = "1";
    }
  }
  for (const z of root.querySelectorAll("[data-zone]")) z.textContent = `(your time: ${ZONE})`;
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
}
tick();
setInterval(tick, 1000);
window.taskdeck.tick = tick;

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

const page = document.body.dataset.page;
const modules = { board: "./board.js", detail: "./detail.js", inbox: "./inbox.js", demo: "./demo.js" };
if (modules[page]) {
  const mod = await import(modules[page]);
  mod.start(live);
}
live.connect();
