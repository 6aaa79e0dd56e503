// Every signed-in page: open the live view, show the connection state and the inbox count,
// show times in the reader's clock, then hand over to the page's own module.

import { LiveView, socketUrl } from "./live.js";
import { hhmm } from "./describe.js";

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
live.on("change", (ids, pendingChanged) => pendingChanged && updateBadge());

export function localiseTimes(root = document) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    if (t.dataset.localised) continue;
    const iso = t.getAttribute("datetime");
    const text = hhmm(iso, true);
    if (text) {
      t.title = iso;
      t.textContent = text;
      t.dataset.localised = "1";
    }
  }
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
